#!/usr/bin/env bash
# Gateway benchmark: laneway serve vs direct nginx vs LiteLLM proxy (about 4 minutes).
# Writes the `gateway` section of docs/benchmarks.md. Thin wrapper so the command is
# the same from any directory; `exec` hands Ctrl-C straight to Python, whose cleanup
# stops every server it started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec .venv/bin/python bench/gateway.py "$@"
