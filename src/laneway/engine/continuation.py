"""What a stream does when its answer is cut after content was sent: a pure plan.

Three ways on, decided here without a clock, a loop or I/O (so they are
tested as plain functions):

- **continue with a prefill**: a source that ``accepts_prefill`` is sent the
  caller's request with the text already sent as an assistant prefill;
- **restart and splice**: another source is asked afresh, and its answer is
  forwarded only once it has repeated exactly the text already sent
  (``Splice``), from where the caller's copy ends;
- **end honestly**: no source may continue; the stream ends with
  ``StreamInterrupted``, never as a complete answer.

``ContinuationPlan`` reads the lane's ``continue_on_cut`` (``True``: prefill
sources only; ``"restart"``: any source, spliced) and whether the lane is
resuming an answer an earlier lane of the chain began (``Resume``: every
source is then asked afresh and spliced, since a lane's ``accepts_prefill``
vouches only for its own sources). Once tool-call deltas were sent, a text
comparison cannot vouch for a restarted answer: only prefills go on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.types import ChatChunk

ContinueOnCut = bool | Literal["restart"]


@dataclass(frozen=True, slots=True)
class Resume:
    """An answer an earlier lane of the chain began: the text sent, and the id its chunks carry."""

    sent: str
    answer_id: object


@dataclass(frozen=True, slots=True)
class ContinuingSource:
    """A source as the plan sees it: its name and whether it takes an assistant prefill."""

    name: str
    accepts_prefill: bool


class Opening(Enum):
    """How a continuation's request is made on one source."""

    PREFILL = "prefill"
    """The caller's request plus the text sent as an assistant prefill."""
    SPLICE = "splice"
    """The caller's request afresh; the answer is spliced onto the text sent."""


@dataclass(frozen=True, slots=True)
class ContinuationPlan:
    """One lane's rules for going on after a cut (see the module's docstring)."""

    continue_on_cut: ContinueOnCut
    resuming: bool = False

    @property
    def mode(self) -> ContinueOnCut:
        """The rule in force: a resumed answer is always restarted and spliced."""
        return "restart" if self.resuming else self.continue_on_cut

    def continuing(
        self,
        candidates: Sequence[ContinuingSource],
        tried: Collection[str],
        *,
        tool_deltas: bool,
        expired: bool,
    ) -> list[str]:
        """The sources, in lane order, that may continue the answer; none: end honestly.

        Sources already tried are not asked again, and nothing continues once
        the deadline has passed.
        """
        mode = self.mode
        if not mode or expired:
            return []
        restart = mode == "restart" and not tool_deltas
        return [
            c.name for c in candidates if c.name not in tried and (c.accepts_prefill or restart)
        ]

    def opening(self, accepts_prefill: bool) -> Opening:
        """How to ask a source that continues: with the prefill where it takes one."""
        if self.resuming or not accepts_prefill:
            return Opening.SPLICE
        return Opening.PREFILL

    def splice_after_refusal(self, failure: AttemptFailure) -> bool:
        """Whether a prefill the source refused is asked again at once without it, spliced.

        Only under ``continue_on_cut: restart``, and only for a rejection (the
        source said no to the request; another failure is the attempt's own).
        """
        return failure.kind == FailureKind.REJECTED and self.continue_on_cut == "restart"

    def hands_over(self, *, tool_deltas: bool) -> bool:
        """Whether a later lane of the chain may resume the answer this lane broke off.

        Only under ``continue_on_cut: restart`` (the later lane's answer is
        spliced only if it begins with exactly the text sent), or when this
        lane was itself resuming; never once tool-call deltas were sent.
        """
        return (self.resuming or self.continue_on_cut == "restart") and not tool_deltas


@dataclass(slots=True)
class Splice:
    """A restarted answer's opening, held back until it matches the text already sent.

    ``take`` returns the chunk to forward (``None`` while held back), the
    first one cut to the part the caller does not have yet, and raises a
    ``diverged`` failure as soon as the answer departs from the sent text.
    """

    sent: str
    seen: list[str] = field(default_factory=list)
    done: bool = False

    def take(self, chunk: ChatChunk) -> ChatChunk | None:
        """The chunk to forward, ``None`` while the sent text is being repeated."""
        if self.done:
            return chunk
        if chunk.content:
            self.seen.append(chunk.content)
        seen = "".join(self.seen)
        if not (self.sent.startswith(seen) or seen.startswith(self.sent)):
            raise AttemptFailure(
                FailureKind.DIVERGED, "the restarted answer differs from the text sent"
            )
        if len(seen) < len(self.sent):
            if chunk.finish_reason is not None:
                raise AttemptFailure(
                    FailureKind.DIVERGED, "the restarted answer is shorter than the text sent"
                )
            return None
        self.done = True
        return with_content(chunk, seen[len(self.sent) :])


def with_content(chunk: ChatChunk, text: str) -> ChatChunk:
    """``chunk`` carrying ``text`` as its content and nothing held back before it."""
    raw = chunk.raw
    choices = (raw or {}).get("choices") or []
    if raw is not None and choices:
        delta = {
            k: v for k, v in (choices[0].get("delta") or {}).items() if k != "reasoning_content"
        }
        first = {**choices[0], "delta": {**delta, "content": text}}
        raw = {**raw, "choices": [first, *choices[1:]]}
    return dataclasses.replace(chunk, content=text, reasoning_content="", raw=raw)
