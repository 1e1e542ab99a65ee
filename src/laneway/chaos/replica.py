"""One replica process of a shared-state scenario: ``python -m laneway.chaos.replica``.

Arguments: ``SIM_URL STATE_URL SCALE RUN KEY``. It rebuilds the scenario
from ``build(SCALE, RUN)`` (the same specs and lane name as its siblings),
runs it with its own ``Engine``, and prints one JSON line: its calls and
how often Redis was unreachable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Sequence

from laneway.chaos.drive import drive
from laneway.chaos.scenarios import build, select


async def _main(sim_url: str, state_url: str, scale: float, run: str, key: str) -> None:
    (scenario,) = select(build(scale, run), [key])
    result = await drive(scenario, sim_url, state_url)
    calls = [dataclasses.asdict(call) for call in result.calls]
    print(json.dumps({"calls": calls, "outages": result.outages}))


def main(argv: Sequence[str]) -> int:
    """Run one replica; returns the exit status."""
    sim_url, state_url, scale, run, key = argv
    asyncio.run(_main(sim_url, state_url, float(scale), run, key))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
