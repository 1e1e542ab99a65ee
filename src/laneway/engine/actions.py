"""What the call loop's decision tells its driver to do next (``laneway.engine.decision``).

Tenacity's ``iter()`` returns "attempt", "sleep" or the outcome; a call here
also picks its sources through admission and may race a hedge, so:

| action | the driver |
|---|---|
| ``Pick`` | asks admission for the next attempt's source (a store round trip) |
| ``Send(admitted)`` | starts an attempt on the admitted source |
| ``PickHedge(sources)`` | asks admission for a hedge among ``sources`` |
| ``SendHedge(admitted)`` | starts the hedge beside the attempt in flight |
| ``Pause(until, reason)`` | waits until ``until``: for admission (woken early by a |
| | release), or, with attempts in flight, for the first of them to end |
| ``Done(admitted, result)`` | settles the winner (or hands it over, held), cancels the rest |
| ``Stop(error)`` | ends the call with ``error``, its verdict |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from laneway.core.errors import CallFailed
from laneway.core.values import value
from laneway.engine.admission import Admitted, CallSources

T = TypeVar("T")

HEDGE_DUE = "hedge"
"""A ``Pause``'s reason while the first attempt runs alone until its hedge is due."""
ANSWER = "answer"
"""A ``Pause``'s reason while the attempts in flight run and nothing more will start."""


@dataclass(frozen=True, slots=True)
class Pick:
    """Ask admission for the next attempt's source, then tell the decision ``picked``."""


PICK = Pick()
"""The one ``Pick`` (it has no fields)."""


@value
class Send:
    """Start an attempt on ``admitted``'s source."""

    admitted: Admitted


@value
class PickHedge:
    """Ask admission for a hedge among ``sources`` (the first attempt's own excluded)."""

    sources: CallSources


@value
class SendHedge:
    """Start the hedge on ``admitted``'s source, beside the attempt in flight."""

    admitted: Admitted


@value
class Pause:
    """Wait until ``until`` (the call clock's time; ``inf``: until woken), for ``reason``."""

    until: float
    reason: str


@value
class Stop:
    """End the call with ``error``."""

    error: CallFailed


@value
class Done(Generic[T]):
    """``admitted``'s attempt answered ``result`` after ``elapsed`` s (``hedge``: the hedge's)."""

    admitted: Admitted
    result: T
    elapsed: float
    hedge: bool = False
