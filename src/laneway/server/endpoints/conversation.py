"""One chat call read and answered in a dialect's wire format: the core of the chat APIs.

Each chat API's route (``ChatRoute``: Chat Completions, Anthropic's Messages,
the Responses API) names its dialect (``server.dialect``) and hands the request
here: the dialect reads the body into a ``ChatRequest``, the engine answers it
(streamed or not) under the key's limits, and the dialect writes the answer.
"""

from __future__ import annotations

from collections.abc import Callable

from laneway.core.records import CallMeta
from laneway.server.context import RequestContext
from laneway.server.dialect import Dialect, InboundChat
from laneway.server.limits import LimitedCall
from laneway.server.parse import cache_control, caller_deadline
from laneway.server.parts import GatewayParts, call_meta
from laneway.server.request_ids import forwarded_headers
from laneway.server.streaming import forward_stream
from laneway.server.watch import DisconnectWatch


class ChatRoute:
    """One chat API: its dialect, loaded on the route's first call (Anthropic's and the
    Responses API's modules are not imported at start: time to ready)."""

    __slots__ = ("_conversation", "_dialect", "_load")

    def __init__(self, conversation: Conversation, load: Callable[[], Dialect]) -> None:
        self._conversation = conversation
        self._load = load
        self._dialect: Dialect | None = None

    async def answer(self, ctx: RequestContext) -> None:
        """One chat call in the route's wire format."""
        dialect = self._dialect
        if dialect is None:
            dialect = self._dialect = self._load()
        await self._conversation.converse(ctx, dialect)


class Conversation:
    """Chat calls over ``parts``, in whichever dialect the endpoint speaks."""

    __slots__ = ("parts",)

    def __init__(self, parts: GatewayParts) -> None:
        self.parts = parts

    async def converse(self, ctx: RequestContext, dialect: Dialect) -> None:
        """One chat call read and answered in ``dialect``'s wire format."""
        parts = self.parts
        ctx.dialect = dialect
        caller, data, lane = await parts.request(ctx)
        call = dialect.read(data, forwarded_headers(ctx.headers, ctx.request_id))
        deadline = caller_deadline(ctx.headers, parts.margin, streaming=call.stream)
        meta = call_meta(caller, ctx)
        if call.stream:
            with parts.calls:
                async with parts.limited(caller, lane, call.request) as limited:
                    await self._stream(ctx, lane, call, deadline, meta, limited)
            return
        cache = cache_control(ctx.headers)
        result, rate_headers = await parts.held(
            ctx,
            caller,
            lane,
            call.request,
            lambda: parts.engine.chat(
                lane, call.request, deadline=deadline, meta=meta, cache=cache
            ),
        )
        await parts.reply(ctx, result, call.body(result), rate_headers)

    async def _stream(
        self,
        ctx: RequestContext,
        lane: str,
        call: InboundChat,
        deadline: float | None,
        meta: CallMeta,
        limited: LimitedCall,
    ) -> None:
        parts = self.parts
        stream = parts.engine.chat_stream(lane, call.request, deadline=deadline, meta=meta)
        try:
            with DisconnectWatch(ctx.receive, ctx.departure):
                closing = await forward_stream(
                    stream, ctx.send, call.encoder(), limited.rate_headers
                )
        finally:
            await stream.aclose()
            limited.answered(stream, stream.lane.name)
        if parts.metrics is not None:
            parts.metrics.responded(200)
        await ctx.send({"type": "http.response.body", "body": parts.redactor.bytes(closing)})
