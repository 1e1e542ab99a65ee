"""``POST /v1/ocr``: Mistral's OCR shape on ``kind: ocr`` lanes (``wire.mistral_ocr``)."""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.parse import cache_control, caller_deadline
from laneway.server.parts import GatewayParts, call_meta
from laneway.server.render import ocr_body
from laneway.server.watch import DisconnectWatch
from laneway.wire.mistral_ocr import parse_ocr_request


class Ocr:
    """One image or PDF page, sent as a ``data:`` URL, read to text."""

    __slots__ = ("parts",)

    def __init__(self, parts: GatewayParts) -> None:
        self.parts = parts

    async def answer(self, ctx: RequestContext) -> None:
        """One OCR call under the key's limits."""
        parts = self.parts
        caller, data, lane = await parts.request(ctx)
        call = parse_ocr_request(data)
        deadline = caller_deadline(ctx.headers, parts.margin, streaming=False)
        with parts.calls, DisconnectWatch(ctx.receive, ctx.departure):
            async with parts.limited(caller, lane, None) as limited:
                result = await parts.engine.ocr(
                    lane,
                    call.document,
                    mime_type=call.mime_type,
                    deadline=deadline,
                    meta=call_meta(caller, ctx),
                    cache=cache_control(ctx.headers),
                )
                limited.answered(result, result.lane)
        body = ocr_body(result, len(call.document))
        await parts.reply(ctx, result, body, limited.rate_headers)
