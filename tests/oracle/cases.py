"""What the oracle generates: a lane (and its fallback lane) and each source's fault script.

A ``Case`` is plain data, so a failing example reads as a literal ``@example``:
``lanes`` are the ``lanes:`` of a laneway.yaml (sources without a URL: the
runner points each at its script) and ``faults`` give, per source name, the
simulator spec of each request it receives in turn (the last one repeats).
Every spec is written in the simulator's own vocabulary (``laneway.sim``):
statuses, ``Retry-After`` in seconds or milliseconds, sleeps, resets, stalls,
cut and empty streams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from laneway.config.models import LanewayConfig
from tests.oracle.upstream import source_url

MAIN = "main"
FALLBACK = "spare"
PRICE = {"input": 1.0, "output": 2.0}
"""Every source is priced, so a call's cost is a figure the caller, the row and the metrics
must agree on."""
STATUSES = (429, 500, 502, 503, 504)
LABELS: tuple[int | str, ...] = (*STATUSES, "timeout", "connect", "cut", "empty")
"""What ``retry_on`` may list."""
FAULTS = (
    "ok",
    "nousage",
    "status=400",
    *(f"status={status}" for status in STATUSES),
    "status=429,retry_after=1",
    "status=503,retry_after=2",
    "status=429,retry_after_ms=300",
    "status=503,retry_after=40",
    "sleep=1,status=500",
    "sleep=0.3",
    "sleep=3",
    "sleep=30",
    "reset",
    "no_headers",
    "ttfb=2",
    "cut_after=2",
    "stall_after=2",
    "empty",
)
"""One upstream answer each, as the simulator's spec tokens."""
SECONDS = (0.5, 1.0, 2.5, 5.0, 8.0)


@dataclass(frozen=True)
class Case:
    """One generated run: the lanes, every source's fault script, stream or not, a seed."""

    lanes: dict[str, dict[str, Any]]
    faults: dict[str, tuple[str, ...]]
    stream: bool = False
    seed: int = 0
    config: LanewayConfig = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lanes = {
            name: {
                **body,
                "sources": [{**s, "base_url": source_url(s["name"])} for s in body["sources"]],
            }
            for name, body in self.lanes.items()
        }
        object.__setattr__(self, "config", LanewayConfig.model_validate({"lanes": lanes}))

    def sources(self, lane: str) -> list[str]:
        """The source names of ``lane``, as declared."""
        return [source["name"] for source in self.lanes[lane]["sources"]]


def _maybe(*values: Any) -> st.SearchStrategy[Any]:
    """One of ``values``, or ``None`` (left at its default) as often as each."""
    return st.sampled_from((None, *values))


LABEL_SETS = st.lists(st.sampled_from(LABELS), min_size=1, max_size=4, unique=True)
COUNTS = (st.integers(1, 1), st.integers(1, 2), st.integers(1, 3))
BACKOFF_KIND = st.sampled_from(("constant", "exponential"))
BASE = st.sampled_from((0.0, 0.05, 0.2, 1.0))
CAP = st.sampled_from((0.5, 2.0, 8.0))
JITTER = st.sampled_from(("none", "full", "equal"))
BREAKERS = tuple(
    {"failures": failures, "window": 30.0, "cooldown": cooldown}
    for failures in (1, 2, 3)
    for cooldown in (1.0, 10.0)
)
SOURCE_OPTIONS = {
    "rpm": _maybe(1, 2, 600),
    "tpm": _maybe(40, 100_000),
    "breaker": _maybe(*BREAKERS),
}
PRIORITY = st.integers(0, 2)
WEIGHT = st.sampled_from((1.0, 1.0, 2.0, 0.5))
LANE_OPTIONS = {
    "attempt_timeout": _maybe(0.3, 1.0, 2.0, 4.0),
    "first_byte_timeout": _maybe(0.2, 1.0),
    "idle_timeout": _maybe(0.5, 2.0),
    "max_pushbacks": _maybe(1, 2),
    "max_pushback_wait": _maybe(1.0, 5.0),
    "breaker": _maybe(*BREAKERS),
}
RETRIES = st.integers(0, 3)
DEADLINE = st.sampled_from(SECONDS)
SCRIPT = st.lists(st.sampled_from(FAULTS), min_size=1, max_size=4).map(tuple)
SEED = st.integers(0, 2**16)


def _options(draw: st.DrawFn, body: dict[str, Any], options: dict[str, Any]) -> None:
    for key, values in options.items():
        chosen = draw(values)
        if chosen is not None:
            body[key] = chosen


def retry_on(draw: st.DrawFn, retries: int) -> list[int | str] | dict[int | str, int]:
    """A list of retried classes, or a map giving each its own count (up to ``retries``)."""
    labels = draw(LABEL_SETS)
    if draw(st.booleans()):
        return labels
    return {label: draw(COUNTS[retries - 1]) for label in labels}


def backoff(draw: st.DrawFn) -> dict[str, Any]:
    """Constant or exponential, with or without jitter."""
    kind = draw(BACKOFF_KIND)
    shape: dict[str, Any] = {"kind": kind, "base": draw(BASE)}
    if kind == "exponential":
        shape |= {"cap": draw(CAP), "jitter": draw(JITTER)}
    return shape


def source(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A source: its rank, weight, and maybe quota and a breaker of its own."""
    body: dict[str, Any] = {"name": name, "model": "m", "price": PRICE}
    body |= {"priority": draw(PRIORITY), "weight": draw(WEIGHT)}
    _options(draw, body, SOURCE_OPTIONS)
    return body


def lane(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    """A chat lane over ``names``: the whole policy, each part drawn or left at its default."""
    retries = draw(RETRIES)
    body: dict[str, Any] = {"deadline": draw(DEADLINE), "retries": retries}
    if retries:
        body["retry_on"] = retry_on(draw, retries)
    body["backoff"] = backoff(draw)
    _options(draw, body, LANE_OPTIONS)
    body["sources"] = [source(draw, name) for name in names]
    return body


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A main lane of 1 to 3 sources, maybe a fallback lane of one, and every source's faults."""
    names = [f"p{index}" for index in range(draw(st.integers(1, 3)))]
    lanes = {MAIN: lane(draw, names)}
    if draw(st.booleans()):
        lanes[MAIN]["fallback_lanes"] = [FALLBACK]
        lanes[FALLBACK] = lane(draw, ["f0"])
    every = [s["name"] for body in lanes.values() for s in body["sources"]]
    faults = {name: draw(SCRIPT) for name in every}
    return Case(lanes, faults, draw(st.booleans()), draw(SEED))
