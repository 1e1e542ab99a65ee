"""A fixed number of ``lw.chat()`` calls, for instruction counts (``engine_instructions.sh``).

    python bench/_engine_calls.py BASE_URL CONCURRENCY CALLS

The client is ``_engine_load.laneway_client`` (the engine overhead benchmark's
lane), run from whatever ``laneway`` is on ``PYTHONPATH``, so two trees are
measured by the same driver. 50 warm-up calls come first. Run under
``valgrind --tool=callgrind`` twice with different ``CALLS``: the difference of
the totals over the difference of the calls is the instructions of one call,
start-up and warm-up cancelled out. Instruction counts repeat on a busy
machine, where wall-clock figures do not.
"""

from __future__ import annotations

import asyncio
import sys

from _engine_load import laneway_client


async def main(base_url: str, concurrency: int, calls: int) -> None:
    call, close = await laneway_client(base_url)
    for _ in range(50):
        await call()
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await close()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    url, conc, count = sys.argv[1:4]
    asyncio.run(main(url, int(conc), int(count)))
