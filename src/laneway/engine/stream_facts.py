"""What a lane's stream knows of itself: the attempts it made and the answer it sent.

``StreamAttempts`` keeps every attempt of the lane's part of a streamed call
in order (each segment's own, a continuation's marked as such, a refused
prefill's) and each finished segment's usage, so a continued stream is
priced answer by answer. ``SentAnswer`` keeps what the caller received: the
text (which a continuation's prefill or splice needs), the id a continuation
keeps, the model the chunks named, and whether tool-call deltas went out;
what was relayed unread is read only when one of them is asked for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from laneway.core.types import HEDGE_WON, Attempt, ChatChunk, Usage
from laneway.core.usage import sum_usage
from laneway.engine.continuation import Resume
from laneway.engine.events import RawEvents, Text, joined_text


@dataclass(slots=True)
class _Part:
    """A finished segment: where its attempt record is and what it used."""

    index: int
    usage: Usage


class StreamAttempts:
    """The attempts of one lane's stream and the usage of each of its answers."""

    __slots__ = ("_made", "_parts", "_refusals")

    def __init__(self) -> None:
        self._made: list[Attempt] = []
        self._parts: list[_Part] = []
        self._refusals: list[Attempt] = []

    @property
    def all(self) -> tuple[Attempt, ...]:
        """Every attempt so far; a continued stream's answers carry their own usage."""
        if len(self._parts) < 2:
            return tuple(self._made)
        return self.priced()

    def priced(self) -> tuple[Attempt, ...]:
        """Every attempt, each answer carrying its own usage."""
        attempts = list(self._made)
        for part in self._parts:
            attempts[part.index] = dataclasses.replace(attempts[part.index], usage=part.usage)
        return tuple(attempts)

    @property
    def usage(self) -> Usage | None:
        """The usage of the answers that ended (``None`` before, or when unreported).

        One answer's is the provider's, or its estimate; several answers' is
        their sum (``estimated`` when any part is).
        """
        if not self._parts:
            return None
        if len(self._parts) == 1:
            usage = self._parts[0].usage
            return usage if usage.known else None
        return sum_usage(part.usage for part in self._parts)

    @property
    def tried(self) -> set[str]:
        """The sources asked so far."""
        return {a.source for a in self._made}

    def refused(self, attempt: Attempt) -> None:
        """A source refused a continuation's prefill and was asked again without it."""
        self._refusals.append(attempt)

    def ran(self, attempts: tuple[Attempt, ...], continuation: bool) -> None:
        """The attempts of one run of the call loop (a refused prefill's after its own)."""
        if continuation:
            attempts = tuple(dataclasses.replace(a, continuation=True) for a in attempts)
        self._made.extend([*attempts, *self._refusals])
        self._refusals.clear()

    def opened(
        self, source: str, continuation: bool, *, hedge: bool = False, began: float | None = None
    ) -> int:
        """A segment's attempt, answering (``hedge``: a hedge that won its race, first to its
        first token); its index, to be brought up to date when it ends."""
        outcome = HEDGE_WON if hedge else "ok"
        attempt = Attempt(source, outcome, 0.0, 200, continuation=continuation, began=began)
        self._made.append(attempt)
        return len(self._made) - 1

    def opening(self, index: int) -> Attempt:
        """The attempt record at ``index``."""
        return self._made[index]

    def ended(self, index: int, attempt: Attempt, usage: Usage) -> None:
        """A segment ended: its attempt's final record and what it used."""
        self._made[index] = attempt
        self._parts.append(_Part(index, usage))


class SentAnswer:
    """What the caller of a lane's stream received (after ``resume``'s text, when resuming).

    Relayed blocks (``RawEvents``) are kept unread: their text, their tool-call
    deltas and the model their chunks name are read only when asked for.
    """

    __slots__ = ("_model", "_text", "_tool_deltas", "_unchecked", "_unnamed", "answer_id")

    def __init__(self, resume: Resume | None) -> None:
        self._text: Text = [resume.sent] if resume is not None else []
        self.answer_id: object = resume.answer_id if resume is not None else None
        self._model: str | None = None
        self._tool_deltas = False
        self._unchecked: list[RawEvents] = []
        """Relayed blocks not yet searched for tool-call deltas."""
        self._unnamed: list[RawEvents] = []
        """Relayed blocks since the last parsed chunk that named a model."""

    @property
    def text(self) -> str:
        """The answer's text sent so far."""
        return joined_text(self._text)

    @property
    def tool_deltas(self) -> bool:
        """Whether tool-call deltas were sent."""
        if not self._tool_deltas and self._unchecked:
            blocks, self._unchecked = self._unchecked, []
            self._tool_deltas = any(c.tool_call_delta for raw in blocks for c in raw.chunks())
        return self._tool_deltas

    @property
    def model(self) -> str | None:
        """The model the last chunk that names one names."""
        blocks, self._unnamed = self._unnamed, []
        for raw in reversed(blocks):
            named = [chunk.model for chunk in raw.chunks() if chunk.model]
            if named:
                self._model = named[-1]
                break
        return self._model

    def took(self, chunk: ChatChunk) -> ChatChunk:
        """Note a chunk the caller receives; a continuation's keep the first answer's id."""
        raw = chunk.raw
        if raw is not None and "id" in raw:
            if self.answer_id is None:
                self.answer_id = raw["id"]
            elif raw["id"] != self.answer_id:
                chunk = dataclasses.replace(chunk, raw={**raw, "id": self.answer_id})
        if chunk.content:
            self._text.append(chunk.content)
        if chunk.model:
            self._model = chunk.model
            self._unnamed.clear()
        if not self._tool_deltas and chunk.tool_call_delta:
            self._tool_deltas = True
        return chunk

    def relayed(self, raw: RawEvents) -> None:
        """Note a block the caller receives as it came (the first answer's own, so its id)."""
        self._text.append(raw)
        self._unchecked.append(raw)
        self._unnamed.append(raw)
