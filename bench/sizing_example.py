"""The seed's engram lane sized by ``laneway size``: writes the worked example in docs/sizing.md.

Two sections, each with the command that produced it:

- ``sizing-measure``: the seed's four candidates (and one whose schedule
  outruns the deadline) measured by ``laneway size --measure`` against a
  simulated upstream slower than any timeout, beside the walls the seed
  measured for LiteLLM 1.96.2 (quoted from the seed, not re-measured here).
- ``sizing-telemetry``: telemetry of a known latency distribution (most
  answers in ~1.2 s, a 4% tail at 6.5 s, 3% 503s) recorded through the
  engine, then ``laneway size`` and ``laneway size --check`` on it.

Run: ``.venv/bin/python bench/sizing_example.py`` (about 5 minutes: the
measured walls are real seconds).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml

from _report import REPO_ROOT, provenance, write_section
from laneway.app import assemble
from laneway.config.load import load_config
from laneway.core.types import ChatRequest
from laneway.sim import start_in_thread

DOC = "docs/sizing.md"
COMMAND = ".venv/bin/python bench/sizing_example.py"
CANDIDATES = ["8s/2", "7s/2", "6s/2", "8s/1", "10s/2"]
SEED_WALLS = {"8s/2": "29.07s", "7s/2": "25.72s", "6s/2": "23.10s", "8s/1": "18.52s"}
"""LiteLLM 1.96.2's measured worst walls for these candidates (seed 000, engram sizing)."""
DISTRIBUTION = "sleep=1.2,slow=0.04,slow_sleep=6.5,flaky=0.03,seed=11"
CALLS = 400


def laneway(*args: str) -> str:
    """Run the ``laneway`` command of this checkout; its standard output."""
    done = subprocess.run(
        [str(REPO_ROOT / ".venv/bin/laneway"), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
    )
    return done.stdout


def measure_section() -> str:
    args = ["size", "engram-summarize", "--config", "examples/laneway.yaml", "--measure"]
    args += ["--slow-upstream", "1h", "--runs", "2", "--max-calls", "40"]
    for candidate in CANDIDATES:
        args += ["--candidate", candidate]
    out = laneway(*args)
    seed_rows = "\n".join(f"| {c} | {wall} |" for c, wall in SEED_WALLS.items())
    return (
        f"{provenance(COMMAND)}\n"
        f"`laneway {' '.join(args)}`:\n\n```\n{out.strip()}\n```\n\n"
        "The seed's walls for LiteLLM 1.96.2 on the same candidates (quoted from "
        "`000_*.txt`, measured there, not here):\n\n"
        f"| candidate | LiteLLM worst wall |\n|---|---:|\n{seed_rows}\n"
    )


async def record(config_path: Path) -> None:
    """``CALLS`` chat calls, 64 at a time, recorded by the telemetry writer."""
    config, environ = load_config(config_path)
    built = assemble(config, environ, config_path.parent)
    engine, writer = built.engine, built.telemetry
    assert writer is not None
    writer.start()
    gate = asyncio.Semaphore(64)
    request = ChatRequest([{"role": "user", "content": "summarize the engram"}])

    async def one() -> None:
        async with gate:
            await engine.chat("engram-summarize", request)

    try:
        await asyncio.gather(*(one() for _ in range(CALLS)))
    finally:
        await engine.aclose()
        await writer.aclose()


def telemetry_section(folder: Path) -> str:
    examples = yaml.safe_load((REPO_ROOT / "examples/laneway.yaml").read_text())
    lane = examples["lanes"]["engram-summarize"]
    with start_in_thread() as sim:
        lane["sources"] = [
            {"base_url": f"{sim.base_url}/b/{DISTRIBUTION}/v1", "model": "some/model"}
        ]
        config = {"lanes": {"engram-summarize": lane}, "telemetry": {"url": "telemetry.sqlite3"}}
        path = folder / "laneway.yaml"
        path.write_text(yaml.safe_dump(config))
        asyncio.run(record(path))
    sized = laneway("size", "engram-summarize", "--config", str(path))
    checked = laneway("size", "--check", "--config", str(path))
    return (
        f"{provenance(COMMAND)}\n"
        f"{CALLS} calls on the engram lane as `examples/laneway.yaml` declares it "
        f"(8s x 3 attempts, 1s backoff, deadline 28s, client_deadline 30s), against "
        f"`laneway sim` serving `{DISTRIBUTION}`, recorded to SQLite.\n\n"
        f"`laneway size engram-summarize --config laneway.yaml`:\n\n```\n{sized.strip()}\n```\n\n"
        f"`laneway size --check --config laneway.yaml`:\n\n```\n{checked.strip()}\n```\n"
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="laneway-sizing-") as folder:
        write_section("sizing-telemetry", telemetry_section(Path(folder)), DOC)
    write_section("sizing-measure", measure_section(), DOC)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
