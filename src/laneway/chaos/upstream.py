"""What the upstream saw: the sim's hit log, its clock, and the status of every hit.

Every client is measured here, not by its own account: attempts are the
sim's hits, and each hit's status is recovered by replaying the sim's fault
rules over the hit log in time order (rate bucket first, then flap outage,
then ``fail_first``, then an unconditional ``status``, as
``laneway.sim._faults`` applies them). A client that hides its retries, as
LiteLLM's Router does, is counted the same as one that reports them.

All times are on the sim's clock (seconds since the sim started), the one
timeline that several client processes share.
"""

from __future__ import annotations

import uuid
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aiohttp

from laneway.core.clock import TimeSource
from laneway.sim import Behaviour, parse_spec

RATE_WINDOW = 60.0
"""The sim's ``rpm`` window, in seconds."""
FAILURE_STATUS = 503
"""The sim's status for ``flap`` and ``fail_first`` failures without ``status``."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One request the upstream received: when (sim clock), for which spec, answered how."""

    at: float
    spec: str
    status: int


async def clock_offset(session: aiohttp.ClientSession, sim_url: str, clock: TimeSource) -> float:
    """Sim time minus ``clock.now()``: add it to a local time to get the sim's.

    One marker request (a spec of its own) is logged by the sim; its logged
    time stands for the midpoint of the round trip, off by well under a
    millisecond on loopback.
    """
    spec = f"id=mark-{uuid.uuid4().hex[:12]}"
    sent = clock.now()
    async with session.get(f"{sim_url}/b/{spec}/v1/models") as response:
        await response.read()
    midpoint = (sent + clock.now()) / 2
    times = (await hits(session, sim_url)).get(spec, [])
    if not times:
        raise RuntimeError(f"the sim at {sim_url} did not log the clock marker")
    return times[-1] - midpoint


async def hits(session: aiohttp.ClientSession, sim_url: str) -> dict[str, list[float]]:
    """Every spec's hit times, from the sim's ``/_hits``."""
    async with session.get(f"{sim_url}/_hits") as response:
        body = await response.json()
    return {spec: list(entry["times"]) for spec, entry in body.items()}


def replay_hits(log: Mapping[str, Sequence[float]], specs: Sequence[str]) -> list[Hit]:
    """The hits of ``specs`` in time order, each with the status the sim gave it."""
    behaviours = {spec: parse_spec(spec) for spec in specs}
    events = sorted((at, spec) for spec in specs for at in log.get(spec, ()))
    buckets: dict[str, deque[float]] = {}
    ordinals: Counter[str] = Counter()
    result = []
    for at, spec in events:
        behaviour = behaviours[spec]
        throttled = _throttled(behaviour, spec, at, buckets)
        status = 429 if throttled else _scripted(behaviour, spec, at, ordinals)
        result.append(Hit(at, spec, status))
    return result


def _throttled(
    behaviour: Behaviour, spec: str, at: float, buckets: dict[str, deque[float]]
) -> bool:
    if behaviour.rpm is None:
        return False
    accepted = buckets.setdefault(behaviour.bucket or spec, deque())
    while accepted and accepted[0] <= at - RATE_WINDOW:
        accepted.popleft()
    if len(accepted) >= behaviour.rpm:
        return True
    accepted.append(at)
    return False


def _scripted(behaviour: Behaviour, spec: str, at: float, ordinals: Counter[str]) -> int:
    if behaviour.flaky is not None:
        raise ValueError(f"{spec}: flaky outcomes are random and cannot be replayed")
    failing = behaviour.status if behaviour.status is not None else FAILURE_STATUS
    flap = behaviour.flap
    if flap is not None and at % (2 * flap) < flap:
        return failing
    if behaviour.fail_first is not None:
        ordinals[spec] += 1
        if ordinals[spec] <= behaviour.fail_first:
            return failing
    if behaviour.status is not None and not behaviour.fails_conditionally:
        return behaviour.status
    return 200
