#!/usr/bin/env bash
# Every gateway benchmark of issue 16, one after another, each rewriting its own section
# of docs/benchmarks.md; prints the time each took and the total.
#
#   bash bench/all.sh            full figures (~27 minutes on a 2-core box; 32 with --litellm and RSS_SECONDS=300)
#   bash bench/all.sh --quick    every script in its quick mode (~3 minutes; not for the doc)
#   bash bench/all.sh --litellm  LiteLLM's proxy beside laneway where it can run the load
#                                (its venv, bench/.venv-litellm, is built on first use: ~2 min)
# The gateway benchmark runs the Portkey gateway (Node) beside laneway whenever node and npm
# can install it (bench/.portkey, on first use: ~20 s; skipped, with the reason, otherwise).
# The cost ledger runs last (~12 minutes: 9 rounds of 12 rows).
# RSS_SECONDS (default 120) is the c=32 load before the workers benchmark reads RSS; the
# issue's target is after 5 minutes (RSS_SECONDS=300 adds ~6 minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=() litellm=() gateway=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=(--quick) ;;
    --litellm) litellm=(--litellm) ;;
    *) echo "usage: bash bench/all.sh [--quick] [--litellm]" >&2; exit 2 ;;
  esac
done
[[ ${#litellm[@]} -eq 0 ]] && gateway=(--no-litellm)
rss=${RSS_SECONDS:-120}
[[ ${#quick[@]} -gt 0 ]] && rss=${RSS_SECONDS:-5}
py=.venv/bin/python
began=$SECONDS
step() {
  local name=$1; shift
  local t=$SECONDS
  echo "=== $name: $*" >&2
  "$@"
  echo "=== $name took $((SECONDS - t)) s" >&2
}
if [[ ${#quick[@]} -gt 0 ]]; then
  step gateway $py bench/gateway.py --quick "${gateway[@]}" --no-write
  step profile $py bench/profile_gateway.py --seconds 5 --no-write
  step streaming $py bench/streaming.py --quick "${litellm[@]}" --no-write
  step embeddings $py bench/embeddings.py --quick "${litellm[@]}" --no-write
  step workers $py bench/workers.py --quick --rss-seconds "$rss" --no-write
  step scaleout $py bench/scaleout.py --quick --no-write
  step cost-ledger $py bench/cost_ledger.py --rounds 1 --seconds 1
else
  step gateway $py bench/gateway.py "${gateway[@]}"
  step profile $py bench/profile_gateway.py
  step streaming $py bench/streaming.py "${litellm[@]}"
  step embeddings $py bench/embeddings.py "${litellm[@]}"
  step workers $py bench/workers.py --rss-seconds "$rss"
  step scaleout $py bench/scaleout.py
  step cost-ledger $py bench/cost_ledger.py --write docs/benchmarks.md
fi
echo "all benchmarks: $((SECONDS - began)) s" >&2
