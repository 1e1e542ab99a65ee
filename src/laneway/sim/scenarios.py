"""The faults a primary upstream can throw at a lane with a fallback, as sim scripts.

Each scenario is what the primary does (a spec in real seconds), what its
fallback is like, and how it is called: once, or a series of calls a few
seconds apart. `FaultScenario.specs(scale, run)` gives the URL specs of one
run: `scale=` shrinks every duration (a test runs the real scenario ten times
faster at 0.1) and `id=` keeps runs sharing one sim apart. A primary of `None`
refuses connections: point it at `refusing_port()`.

Every answer is `ANSWER_WORDS` words long, and each side names itself in its
chunks' `model` (`PRIMARY`, `FALLBACK`), so a caller can tell whose words it got.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PRIMARY = "primary"
FALLBACK = "fallback"
ANSWER_WORDS = 60
"""Words of every scenario's answer: long enough to be cut after 40."""
WORD_GAP = 0.01
"""Seconds between the words of a primary that breaks off mid-answer: its first 40
words reach the caller before the break, as a real stream's would."""


@dataclass(frozen=True, slots=True)
class Specs:
    """The sim specs of one run's two upstreams; `primary` is `None` when it refuses."""

    primary: str | None
    fallback: str


@dataclass(frozen=True, slots=True)
class FaultScenario:
    """One fault on the primary; durations in real seconds."""

    key: str
    fault: str
    """What the primary does, in words."""
    primary: str | None
    """The primary's sim spec, or `None` for a port that refuses connections."""
    fallback: str = "ok"
    """The fallback's sim spec."""
    calls: int = 1
    gap: float = 0.0
    """Seconds between the starts of successive calls."""

    @property
    def span(self) -> float:
        """Seconds from the first call's start to the last's."""
        return (self.calls - 1) * self.gap

    def specs(self, scale: float = 1.0, run: str = "run") -> Specs:
        """Both upstreams' specs, durations times `scale`, unique to `run`."""
        tail = f"chunks={ANSWER_WORDS},scale={scale:g},id={run}-{self.key}"
        primary = None
        if self.primary is not None:
            primary = f"{self.primary},model={PRIMARY},{tail}-{PRIMARY}"
        return Specs(primary, f"{self.fallback},model={FALLBACK},{tail}-{FALLBACK}")


FAULTS: tuple[FaultScenario, ...] = (
    FaultScenario(
        "retry_after_once",
        "one 429 with Retry-After: 2, then healthy",
        "fail_first=1,status=429,retry_after=2",
    ),
    FaultScenario(
        "rate_limited_always", "429 (Retry-After: 2) every time", "status=429,retry_after=2"
    ),
    FaultScenario("server_error_once", "one 500, then healthy", "fail_first=1,status=500"),
    FaultScenario("connection_reset", "resets the connection", "reset"),
    FaultScenario("connection_refused", "refuses the connection", None),
    FaultScenario("no_headers", "accepts the connection, never sends headers", "no_headers"),
    FaultScenario("slow_first_token", "first token after 20 s", "ttfb=20"),
    FaultScenario(
        "cut_mid_answer",
        "stream cut after 40 words; fallback takes a prefill",
        f"cut_after=40,delay={WORD_GAP}",
    ),
    FaultScenario(
        "stall_mid_answer",
        "stream stalls after 40 words; fallback takes a prefill",
        f"stall_after=40,delay={WORD_GAP}",
    ),
    FaultScenario(
        "cut_prefill_refused",
        "stream cut after 40 words; fallback refuses a prefill",
        f"cut_after=40,delay={WORD_GAP}",
        "reject_prefill",
    ),
    FaultScenario("malformed_chunk", "one malformed SSE chunk", "malformed=20"),
    FaultScenario("no_done", "stream ends without [DONE]", "end_without_done"),
    FaultScenario("content_filter", "content-filter 400", "content_filter"),
    FaultScenario("context_length", "context-length 400; fallback window larger", "context_length"),
    FaultScenario(
        "flapping",
        "down (503) 60 s, then healthy; 20 calls 4 s apart",
        "down_for=60",
        calls=20,
        gap=4,
    ),
)
"""Every scenario, in the order of the issue's table."""


def fault_scenario(key: str) -> FaultScenario:
    """The scenario named `key`.

    Raises:
        KeyError: no scenario has that name.
    """
    for scenario in FAULTS:
        if scenario.key == key:
            return scenario
    raise KeyError(key)


@contextmanager
def refusing_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A port on `host` that refuses every connection while the block runs.

    The port is bound but never listened on, so no one else can take it and
    a connection attempt gets a TCP reset at once (`ECONNREFUSED`).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind((host, 0))
        yield int(holder.getsockname()[1])
