"""Hedged requests on the simulator, in virtual time: latency percentiles and extra requests.

Two sources of equal rank (calls alternate between them); the first has a
long tail (95% of answers in 50 ms, 5% in 5 s), the second answers in 50 ms.
Each setting runs ``--calls`` sequential non-streamed chat calls on a
``VirtualClock`` (timings exact, no quiet machine needed) and prints p50,
p99, p999 and the upstream requests per call. Then the fault "accepted,
never answers" (the first source sleeps past a 10 s attempt timeout) with a
healthy second source, without a hedge and with ``after: 1s``.

With ``--streamed`` the same loads are streamed chat calls, read to their
end: a stream's attempt ends at its first token, so the hedge races the time
to first token (TTFT); the percentiles are given for the TTFT and for the
whole answer. The fault is then "first token after 20 s" (the first source
answers at once and streams its first token 20 s later) under a 10 s
``first_byte_timeout``.

    uv run python bench/hedging.py [--calls 4000] [--streamed]
"""

from __future__ import annotations

import argparse
from typing import Any

from laneway import Laneway
from laneway.clocks import VirtualClock
from laneway.config.models import LanewayConfig
from laneway.http.asgi import AsgiTransport
from laneway.sim import create_app

MESSAGES = [{"role": "user", "content": "hello"}]
TAIL = "sleep=0.05,slow=0.05,slow_sleep=5,seed=7"


def config(
    base: str, specs: tuple[str, str], hedge: dict[str, Any] | None, retry: bool
) -> LanewayConfig:
    sources = [
        {"provider": "openai", "base_url": f"{base}/b/{spec}/v1", "model": "sim-model"}
        for spec in specs
    ]
    lane: dict[str, Any] = {"attempt_timeout": "10s", "deadline": "30s", "sources": sources}
    if any("ttfb" in spec for spec in specs):  # the streamed fault: a first token 20 s late
        lane.update(attempt_timeout="30s", first_byte_timeout="10s", deadline="60s")
    if hedge is not None:
        lane["hedge"] = hedge
    if retry:
        lane.update(retries=1, retry_on=["timeout"])
    return LanewayConfig.model_validate({"lanes": {"lane": lane}})


def percentile(values: list[float], share: float) -> float:
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, int(share * len(ranked)))]


def run(
    calls: int,
    specs: tuple[str, str],
    hedge: dict[str, Any] | None,
    retry: bool = False,
    streamed: bool = False,
) -> tuple[list[float], list[float], int]:
    """Times to first token (streamed) and whole latencies of ``calls`` calls, and the
    upstream requests they made."""
    clock = VirtualClock()
    app = create_app(clock.now, clock.wall)
    settings = config("http://sim.virtual", specs, hedge, retry)
    firsts: list[float] = []

    async def one(lw: Laneway) -> None:
        started = clock.now()
        if not streamed:
            await lw.chat("lane", MESSAGES)
            return
        first = None
        async for chunk in lw.chat_stream("lane", MESSAGES):
            if first is None and chunk.content:
                first = clock.now() - started
        assert first is not None
        firsts.append(first)

    async def main() -> list[float]:
        latencies: list[float] = []
        lw = Laneway.from_settings(settings, environ={}, transport=AsgiTransport(app), clock=clock)
        async with lw:
            for _ in range(calls):
                started = clock.now()
                await one(lw)
                latencies.append(clock.now() - started)
        return latencies

    latencies = clock.run(main())
    return firsts, latencies, sum(len(app.hit_times(spec)) for spec in specs)


def percentiles(values: list[float]) -> str:
    return " ".join(f"{percentile(values, q) * 1000:7.0f}ms" for q in (0.5, 0.99, 0.999))


def streamed_rows(calls: int) -> None:
    """The long tail and the "first token after 20 s" fault, streamed."""
    print(f"long tail ({TAIL}) + healthy (sleep=0.05), {calls} streamed calls each")
    print("hedge          TTFT p50  p99      p999      whole p50 p99      p999     requests/call")
    tail: list[tuple[str, dict[str, Any] | None]] = [
        ("off", None),
        ("after 200ms", {"after": "200ms"}),
        ("after p95", {"after": "p95"}),
    ]
    for label, hedge in tail:
        specs = (f"{TAIL},id=s{label}", f"sleep=0.05,id=t{label}")
        firsts, wholes, requests = run(calls, specs, hedge, streamed=True)
        print(f"{label:<14} {percentiles(firsts)}  {percentiles(wholes)}  {requests / calls:.3f}")
    print("fault: first token after 20 s (ttfb=20) on one source, a healthy one beside it,")
    print("first_byte_timeout 10s, attempt_timeout 30s, retries 1 on timeout; 20 streamed calls")
    faults: list[tuple[str, dict[str, Any] | None]] = [
        ("off", None),
        ("after 1s", {"after": "1s"}),
        ("after 1s x1.0", {"after": "1s", "max_share": 1.0}),
    ]
    for label, hedge in faults:
        specs = (f"ttfb=20,id=u{label}", f"sleep=0.05,id=v{label}")
        _, wholes, requests = run(20, specs, hedge, retry=True, streamed=True)
        line = f"p50 {percentile(wholes, 0.5):.2f}s  worst {max(wholes):.2f}s"
        print(f"{label:<14} {line}  requests/call {requests / 20:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--streamed", action="store_true", help="streamed chat calls")
    args = parser.parse_args()
    calls = args.calls
    if args.streamed:
        streamed_rows(calls)
        return
    print(f"long tail ({TAIL}) + healthy (sleep=0.05), {calls} non-streamed calls each")
    print("hedge          p50      p99      p999     requests/call")
    tail: list[tuple[str, dict[str, Any] | None]] = [
        ("off", None),
        ("after 200ms", {"after": "200ms"}),
        ("after p95", {"after": "p95"}),
    ]
    for label, hedge in tail:
        _, latencies, requests = run(
            calls, (f"{TAIL},id={label}", f"sleep=0.05,id=h{label}"), hedge
        )
        cells = [f"{percentile(latencies, q) * 1000:7.0f}ms" for q in (0.5, 0.99, 0.999)]
        print(f"{label:<14} {' '.join(cells)}  {requests / calls:.3f}")
    print("fault: accepted, never answers (sleep=60) on one source, a healthy one beside it,")
    print("attempt_timeout 10s, retries 1 on timeout; 20 calls")
    faults: list[tuple[str, dict[str, Any] | None]] = [
        ("off", None),
        ("after 1s", {"after": "1s"}),
        ("after 1s x1.0", {"after": "1s", "max_share": 1.0}),
    ]
    for label, hedge in faults:
        specs = (f"sleep=60,id=f{label}", f"sleep=0.05,id=g{label}")
        _, latencies, requests = run(20, specs, hedge, retry=True)
        line = f"p50 {percentile(latencies, 0.5):.2f}s  worst {max(latencies):.2f}s"
        print(f"{label:<14} {line}  requests/call {requests / 20:.2f}")


if __name__ == "__main__":
    main()
