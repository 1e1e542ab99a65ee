"""Issue 10's fault table: the lane that must survive each primary fault, and its verdict.

The faults themselves are the sim's scripts (``laneway.sim.scenarios``). Here
is the laneway side, shared by the end-to-end tests, ``laneway simulate
--faults`` and the LiteLLM comparison in ``bench/``: one lane policy for every
row (``POLICY``, the issue's), what a streamed caller must get
(``EXPECTED``), and ``judge``, which holds the calls a client answered (see
``laneway.chaos.asking``) and the requests the sim saw against it.

Durations are real seconds; ``scale`` shrinks the lane and the sim alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from laneway.chaos.asking import StreamedAnswer, ask_series
from laneway.chaos.scenarios import RETRY_ON
from laneway.sim.scenarios import (
    ANSWER_WORDS,
    FALLBACK,
    PRIMARY,
    WORD_GAP,
    FaultScenario,
    Specs,
)

FULL_ANSWER = " ".join(["sim", "answer", *(f"w{n}" for n in range(2, ANSWER_WORDS))])
"""The text every scenario's caller must end up with, word for word."""


@dataclass(frozen=True, slots=True)
class FaultPolicy:
    """The lane of every row, in terms LiteLLM can be configured with too (seconds)."""

    deadline: float = 100.0
    attempt_timeout: float = 30.0
    first_byte_timeout: float = 10.0
    idle_timeout: float = 10.0
    retries: int = 2
    retry_on: tuple[int | str, ...] = RETRY_ON
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    breaker_failures: int = 5
    breaker_window: float = 30.0
    breaker_cooldown: float = 10.0


POLICY = FaultPolicy()

DEFAULT_SLACK = 0.5
"""Seconds added to a row's time bound: a loaded machine's noise, not the fault's."""
CLIENT_GRACE = 5.0
"""Seconds a caller waits beyond the lane's deadline before it gives up on a call."""


@dataclass(frozen=True, slots=True)
class Upstreams:
    """What the lane knows of its two sources beyond their URLs."""

    continue_on_cut: bool | str = False
    fallback_accepts_prefill: bool = False
    primary_window: int | None = None
    fallback_window: int | None = None


Count = tuple[int, int | None]
"""Requests an upstream may receive: ``(least, most)``, ``most`` ``None`` for no bound."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the caller must get; times are real seconds before ``scale``.

    ``answered_by`` lists whose words the caller gets, in order (empty for an
    error answer). Hit counts are inclusive ``(least, most)``; the primary's
    is ``None`` when its requests cannot be counted (a refused connection).
    ``back_on_primary`` (a series of calls): every call starting that long
    after the primary's outage ends is answered by the primary.
    """

    must_get: str
    answered_by: tuple[str, ...]
    primary_hits: Count | None
    fallback_hits: Count
    within: tuple[float, float] = (0.0, 1.0)
    status: int = 200
    error_code: str | None = None
    upstreams: Upstreams = Upstreams()
    back_on_primary: float | None = None
    outage: float = 0.0


_PREFILL = Upstreams(continue_on_cut=True, fallback_accepts_prefill=True)
_WORDS_BEFORE_BREAK = 40 * WORD_GAP
"""Seconds a primary that breaks off after 40 words streams them first."""
_BOTH = (PRIMARY, FALLBACK)

EXPECTED: dict[str, Expectation] = {
    "retry_after_once": Expectation(
        "the primary's answer after ~2 s; the fallback untouched",
        (PRIMARY,),
        (2, 2),
        (0, 0),
        within=(2.0, 3.0),
    ),
    "rate_limited_always": Expectation(
        "the fallback's answer; the primary tried at most twice",
        (FALLBACK,),
        (1, 2),
        (1, 1),
        within=(0.0, 4.0),
    ),
    "server_error_once": Expectation(
        "the primary's answer", (PRIMARY,), (2, 2), (0, 0), within=(0.0, 2.0)
    ),
    "connection_reset": Expectation("the fallback's answer at once", (FALLBACK,), (1, 2), (1, 1)),
    "connection_refused": Expectation("the fallback's answer at once", (FALLBACK,), None, (1, 1)),
    "no_headers": Expectation(
        "the fallback's answer at ~first_byte_timeout (10 s)",
        (FALLBACK,),
        (1, 1),
        (1, 1),
        within=(10.0, 11.0),
    ),
    "slow_first_token": Expectation(
        "the fallback's answer at ~10 s; the slow primary not asked again",
        (FALLBACK,),
        (1, 1),
        (1, 1),
        within=(10.0, 11.0),
    ),
    "cut_mid_answer": Expectation(
        "one complete answer, continued on the fallback after a prefill",
        _BOTH,
        (1, 1),
        (1, 1),
        within=(_WORDS_BEFORE_BREAK, _WORDS_BEFORE_BREAK + 1.0),
        upstreams=_PREFILL,
    ),
    "stall_mid_answer": Expectation(
        "one complete answer, continued on the fallback after idle_timeout (10 s)",
        _BOTH,
        (1, 1),
        (1, 1),
        within=(_WORDS_BEFORE_BREAK + 10.0, _WORDS_BEFORE_BREAK + 11.0),
        upstreams=_PREFILL,
    ),
    "cut_prefill_refused": Expectation(
        "one complete answer: the fallback asked again without the prefill, its rest spliced",
        _BOTH,
        (1, 1),
        (1, 1),
        within=(_WORDS_BEFORE_BREAK, _WORDS_BEFORE_BREAK + 1.0),
        upstreams=Upstreams(continue_on_cut="restart"),
    ),
    "malformed_chunk": Expectation(
        "the primary's answer, the bad event skipped", (PRIMARY,), (1, 1), (0, 0)
    ),
    "no_done": Expectation("the primary's answer, complete", (PRIMARY,), (1, 1), (0, 0)),
    "content_filter": Expectation(
        "that 400, unchanged; no retry, no fallback",
        (),
        (1, 1),
        (0, 0),
        status=400,
        error_code="content_filter",
    ),
    "context_length": Expectation(
        "the fallback's answer (its context window is larger); the request not resent",
        (FALLBACK,),
        (1, 1),
        (1, 1),
        upstreams=Upstreams(primary_window=8_000, fallback_window=128_000),
    ),
    "flapping": Expectation(
        "every call answered; back on the primary within 10 s of its recovery",
        _BOTH,
        (1, None),
        (1, None),
        within=(0.0, POLICY.deadline),
        back_on_primary=10.0,
        outage=60.0,
    ),
}
"""Per scenario key (``laneway.sim.scenarios.FAULTS``): what its caller must get."""


def lane_body(
    scenario: FaultScenario, primary_url: str, fallback_url: str, scale: float = 1.0
) -> dict[str, Any]:
    """The scenario's lane as a ``laneway.yaml`` lane body, durations times ``scale``."""
    p, up = POLICY, EXPECTED[scenario.key].upstreams
    primary: dict[str, Any] = {"name": PRIMARY, "base_url": primary_url, "model": "sim-model"}
    fallback: dict[str, Any] = {
        "name": FALLBACK,
        "base_url": fallback_url,
        "model": "sim-model",
        "priority": 1,
        "accepts_prefill": up.fallback_accepts_prefill,
    }
    if up.primary_window is not None:
        primary["context_window"] = up.primary_window
    if up.fallback_window is not None:
        fallback["context_window"] = up.fallback_window
    return {
        "deadline": p.deadline * scale,
        "attempt_timeout": p.attempt_timeout * scale,
        "first_byte_timeout": p.first_byte_timeout * scale,
        "idle_timeout": p.idle_timeout * scale,
        "retries": p.retries,
        "retry_on": list(p.retry_on),
        "backoff": {
            "kind": "exponential",
            "base": p.backoff_base * scale,
            "cap": p.backoff_cap * scale,
            "jitter": "full",
        },
        "min_attempt": min(0.25, p.attempt_timeout * scale / 4),
        "breaker": {
            "failures": p.breaker_failures,
            "window": p.breaker_window * scale,
            "cooldown": p.breaker_cooldown * scale,
        },
        "continue_on_cut": up.continue_on_cut,
        "sources": [primary, fallback],
    }


@dataclass(frozen=True, slots=True)
class Check:
    """One thing the caller must get: what, what was measured, and whether it held."""

    goal: str
    measured: str
    met: bool


@dataclass(frozen=True, slots=True)
class Hits:
    """Requests each upstream received; ``primary`` is ``None`` when it cannot be counted."""

    primary: int | None
    fallback: int


def judge_fault(
    scenario: FaultScenario,
    answers: Sequence[StreamedAnswer],
    hits: Hits,
    scale: float = 1.0,
    slack: float = DEFAULT_SLACK,
) -> list[Check]:
    """The scenario's checks on what its caller got; ``slack`` is added to time bounds (s)."""
    expected = EXPECTED[scenario.key]
    checks = [_answered(expected, answers), *_hit_checks(expected, hits)]
    checks.append(_timed(expected, answers, scale, slack))
    if expected.back_on_primary is not None:
        checks.append(_back_on_primary(expected, answers, scale))
    return checks


def describe_answer(answer: StreamedAnswer) -> str:
    """How one call ended, in a few words: whose answer, complete or not, or the error."""
    if answer.status == 0:
        return f"no answer ({answer.error})"
    if answer.status != 200:
        return f"{answer.status} {answer.error or '(no code)'}"
    whose = "+".join(answer.models) or "nobody"
    if answer.error is not None:
        return f"{whose}, then error {answer.error}"
    if answer.text == FULL_ANSWER and answer.done:
        return f"{whose} answer, complete"
    words = len(answer.text.split())
    return f"{whose} answer, incomplete ({words} of {ANSWER_WORDS} words)"


def _complete(expected: Expectation, answer: StreamedAnswer) -> bool:
    if expected.status != 200:
        return answer.status == expected.status and answer.error == expected.error_code
    right_source = (
        set(answer.models) <= set(expected.answered_by)
        if expected.back_on_primary is not None
        else answer.models == expected.answered_by
    )
    return (
        answer.status == 200
        and answer.error is None
        and answer.done
        and answer.text == FULL_ANSWER
        and answer.usage is not None
        and right_source
    )


def _answered(expected: Expectation, answers: Sequence[StreamedAnswer]) -> Check:
    good = sum(_complete(expected, a) for a in answers)
    if len(answers) == 1:
        measured = describe_answer(answers[0]) + ("" if answers[0].usage else ", no usage")
    else:
        measured = f"{good} of {len(answers)} complete"
    return Check(expected.must_get, measured, bool(answers) and good == len(answers))


def _hit_checks(expected: Expectation, hits: Hits) -> list[Check]:
    counted = [("fallback", expected.fallback_hits, hits.fallback)]
    if expected.primary_hits is not None and hits.primary is not None:
        counted.insert(0, ("primary", expected.primary_hits, hits.primary))
    return [
        Check(f"{name} requests {_bounds(*bounds)}", str(count), _counted(bounds, count))
        for name, bounds, count in counted
    ]


def _counted(bounds: Count, count: int) -> bool:
    least, most = bounds
    return least <= count and (most is None or count <= most)


def _bounds(least: int, most: int | None) -> str:
    if most is None:
        return f">= {least}"
    return f"= {least}" if least == most else f"{least}..{most}"


def _timed(
    expected: Expectation, answers: Sequence[StreamedAnswer], scale: float, slack: float
) -> Check:
    low, high = expected.within[0] * scale, expected.within[1] * scale
    slowest = max((a.elapsed for a in answers), default=float("nan"))
    fastest = min((a.elapsed for a in answers), default=float("nan"))
    goal = f"answered in {low:.2f}..{high:.2f} s (+{slack:g} s slack)"
    return Check(goal, f"{slowest:.2f} s", low <= fastest and slowest <= high + slack)


def _back_on_primary(
    expected: Expectation, answers: Sequence[StreamedAnswer], scale: float
) -> Check:
    """Judged on call starts alone: no slack, the bound itself is the "few seconds"."""
    assert expected.back_on_primary is not None
    recovered = expected.outage * scale
    settled = recovered + expected.back_on_primary * scale
    late = [a for a in answers if a.start >= settled]
    on_primary = [a for a in answers if a.start >= recovered and a.models == (PRIMARY,)]
    first = min((a.start for a in on_primary), default=None)
    measured = "never" if first is None else f"first primary answer {first - recovered:.2f} s after"
    met = bool(late) and all(a.models == (PRIMARY,) for a in late)
    return Check(f"every call from {settled:.1f} s on answered by the primary", measured, met)


async def call_scenario(
    session: aiohttp.ClientSession,
    chat_url: str,
    model: str,
    scenario: FaultScenario,
    scale: float = 1.0,
) -> list[StreamedAnswer]:
    """Make the scenario's calls (one, or a series ``gap`` apart) to ``chat_url`` as ``model``."""
    starts = [index * scenario.gap * scale for index in range(scenario.calls)]
    timeout = POLICY.deadline * scale + CLIENT_GRACE
    return await ask_series(session, chat_url, model, starts, timeout)


async def count_hits(session: aiohttp.ClientSession, sim_url: str, specs: Specs) -> Hits:
    """How many requests the sim received for each upstream of one run."""

    async def count(spec: str) -> int:
        async with session.get(f"{sim_url}/_hits", params={"spec": spec}) as response:
            return int((await response.json())["count"])

    primary = None if specs.primary is None else await count(specs.primary)
    return Hits(primary, await count(specs.fallback))
