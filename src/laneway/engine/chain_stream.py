"""A streamed chat call over a lane and its ``fallback_lanes``.

Until the first chunk reaches the caller, a lane whose stream fails (every
source failed, its deadline share spent, a lane that is not ready) hands the
call to the next lane of its chain, as a non-streamed call does
(``laneway.engine.fallback``): each lane under its own policy and deadline
share, the whole chain under the caller's one deadline.

After content was sent, the lane's own ``continue_on_cut`` rules apply first.
When its sources cannot continue the answer, the next lane of the chain
resumes it only if the broken lane declares ``continue_on_cut: restart``:
that lane's sources are asked afresh and their answer is spliced only if it
begins with exactly the text already sent, never continued from a prefill,
since a lane's ``accepts_prefill`` vouches only for its own sources. Otherwise
(or after tool-call deltas) the stream ends with the error.

Each lane's part leaves its own telemetry row (``LaneStream``); this object
records nothing itself beyond the lanes skipped as not ready.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from laneway.core.errors import CallFailed, RequestInvalid, StreamInterrupted
from laneway.core.types import Attempt, ChatChunk, ChatRequest, Usage
from laneway.core.usage import sum_usage
from laneway.engine.continuation import Resume
from laneway.engine.stream import LaneStream

if TYPE_CHECKING:
    from laneway.core.records import CallMeta
    from laneway.engine.fallback import Chain
    from laneway.engine.lane import Lane
    from laneway.engine.parts import CallParts
    from laneway.engine.recording import ReplyCost
    from laneway.engine.relay import Encode

T = TypeVar("T")


class ChatStream:
    """An async iterator of ``ChatChunk``; after it ends, the call's facts.

    ``lane``, ``source``, ``attempts``, ``usage``, ``content`` and
    ``malformed_events`` are filled as the stream runs. ``lane`` is the lane
    streaming now; ``attempts`` lists earlier lanes' attempts first, each
    named ``lane/source``. ``cost`` (with ``cost_unknown``) once it ended.
    """

    def __init__(
        self, parts: CallParts, chain: Chain, request: ChatRequest, meta: CallMeta | None = None
    ) -> None:
        self._shared = parts
        self._chain = chain
        self._request = request
        self._meta = meta
        self._earlier_usage: list[Usage] = []
        self._earlier_costs: list[ReplyCost] = []
        self._earlier_malformed = 0
        self._ended = False
        """The current lane's attempts are in the chain's ``tried``: the call failed."""
        self._chunks: AsyncGenerator[ChatChunk, None] | None = None
        self._pieces: AsyncGenerator[bytes, None] | None = None
        first = self._next_lane(None)
        assert first is not None, "a chain has a ready lane, or it raised LaneNotReady"
        self._current = first

    @property
    def lane(self) -> Lane:
        """The lane streaming now (the last tried, once the call failed)."""
        return self._current.lane

    @property
    def source(self) -> str | None:
        """The source answering now."""
        return self._current.source

    @property
    def model(self) -> str | None:
        """The model the answer's chunks name."""
        return self._current.model

    @property
    def attempts(self) -> tuple[Attempt, ...]:
        """Every attempt so far, earlier lanes' first (``lane/source``); when several lanes
        sent parts of the answer, each part's attempt carries its own usage."""
        if self._ended:
            return self._chain.tried
        current = self._current
        own = current.priced_attempts() if self._earlier_usage else current.attempts
        return self._chain.tried + own

    @property
    def usage(self) -> Usage | None:
        """The stream's usage once it ended: the sum over every lane that sent part of it."""
        current = self._current.usage
        if not self._earlier_usage:
            return current
        parts = [*self._earlier_usage, *([current] if current is not None else [])]
        return sum_usage(parts)

    @property
    def cost(self) -> Decimal | None:
        """What the answer cost: the sum over every lane that sent part of it (see ``usage``)."""
        return self._priced()[0]

    @property
    def cost_unknown(self) -> str | None:
        """Why ``cost`` is ``None`` once the stream ended: ``unpriced model``, ``usage unknown``."""
        return self._priced()[1]

    def _priced(self) -> ReplyCost:
        current = self._current
        total = Decimal(0)
        for cost, why in [*self._earlier_costs, (current.cost, current.cost_unknown)]:
            if cost is None:
                return None, why
            total += cost
        return total, None

    @property
    def content(self) -> str:
        """The answer forwarded so far."""
        return self._current.content

    @property
    def malformed_events(self) -> int:
        """Malformed events skipped over every lane's part."""
        return self._earlier_malformed + self._current.malformed_events

    @property
    def elapsed(self) -> float:
        """Seconds since the call started."""
        return self._chain.elapsed()

    def __aiter__(self) -> AsyncGenerator[ChatChunk, None]:
        if self._chunks is None:
            alone = len(self._chain.lanes) == 1
            self._chunks = aiter(self._current) if alone else self._run(aiter)
        return self._chunks

    def relay(self, encode: Encode, wire: str | None) -> AsyncGenerator[bytes, None]:
        """The stream as the bytes to send a caller over the wire (``LaneStream.relay``)."""
        if self._pieces is None:
            alone = len(self._chain.lanes) == 1
            if alone:
                self._pieces = self._current.relay(encode, wire)
            else:
                self._pieces = self._run(lambda lane: lane.relay(encode, wire))
        return self._pieces

    async def aclose(self) -> None:
        """Stop the stream and release its upstream connection at once."""
        for iterator in (self._chunks, self._pieces):
            if iterator is not None:
                await iterator.aclose()

    async def __aenter__(self) -> ChatStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(
        self, each: Callable[[LaneStream], AsyncGenerator[T, None]]
    ) -> AsyncGenerator[T, None]:
        delivered = False
        while True:
            try:
                async with aclosing(each(self._current)) as pieces:
                    async for piece in pieces:
                        delivered = True
                        yield piece
                return
            except CallFailed as exc:
                following = self._after(exc, delivered)
                if following is None:
                    self._ended = True
                    verdict = self._chain.last_failure()
                    raise verdict from verdict.__cause__  # keeps the attempt failure behind it
                self._current = following

    def _after(self, failure: CallFailed, delivered: bool) -> LaneStream | None:
        """The lane that takes over from the current one's ``failure``, if any may."""
        broken = self._current
        if delivered:  # its part of the answer is priced on its own
            failure.attempts = broken.priced_attempts()
        falls_back = self._chain.failed(broken.lane, failure)
        if delivered:
            resume = broken.handover() if isinstance(failure, StreamInterrupted) else None
            following = self._next_lane(resume) if resume is not None else None
        else:
            following = self._next_lane(None) if falls_back else None
        if following is None:
            return None
        if broken.usage is not None:  # it was billed for a part; one that never opened was not
            self._earlier_usage.append(broken.usage)
            self._earlier_costs.append((broken.cost, broken.cost_unknown))
        self._earlier_malformed += broken.malformed_events
        return following

    def _next_lane(self, resume: Resume | None) -> LaneStream | None:
        """A stream on the chain's next lane that can carry the request, under its own deadline."""
        parts, chain = self._shared, self._chain
        while (turn := chain.next_lane()) is not None:
            lane, left = turn
            try:
                lane.refuse_inexpressible(self._request, stream=True)
            except RequestInvalid:
                if chain.failure is None:
                    raise
                continue
            deadline = parts.deadline(lane, left)
            return LaneStream(parts, lane, self._request, deadline, self._meta, resume)
        return None
