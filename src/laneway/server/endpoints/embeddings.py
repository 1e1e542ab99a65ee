"""``POST /v1/embeddings``: OpenAI's Embeddings API on any embed lane."""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.parse import caller_deadline, check_embed_bounds
from laneway.server.parts import GatewayParts, call_meta
from laneway.server.request_ids import forwarded_headers
from laneway.wire.openai.embeddings import embed_call, embeddings_body


class Embeddings:
    """Embeddings of the body's inputs, checked against the lane's bounds first."""

    __slots__ = ("parts",)

    def __init__(self, parts: GatewayParts) -> None:
        self.parts = parts

    async def answer(self, ctx: RequestContext) -> None:
        """One embed call under the key's limits."""
        parts = self.parts
        caller, data, lane = await parts.request(ctx)
        call = embed_call(data, forwarded_headers(ctx.headers, ctx.request_id))
        check_embed_bounds(call, parts.engine.lanes[lane].config)
        deadline = caller_deadline(ctx.headers, parts.margin, streaming=False)
        meta = call_meta(caller, ctx)
        result, rate_headers = await parts.held(
            ctx,
            caller,
            lane,
            call.request,
            lambda: parts.engine.embed(lane, call.request, deadline=deadline, meta=meta),
        )
        body = embeddings_body(result)
        await parts.reply(ctx, result, body, rate_headers)
