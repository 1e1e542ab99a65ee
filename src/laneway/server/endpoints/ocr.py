"""``POST /v1/ocr``: Mistral's OCR shape on ``kind: ocr`` lanes (``wire.mistral_ocr``)."""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.parse import cache_control, caller_deadline
from laneway.server.parts import GatewayParts, call_meta
from laneway.server.render import ocr_body
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
        meta, cache = call_meta(caller, ctx), cache_control(ctx.headers)
        result, rate_headers = await parts.held(
            ctx,
            caller,
            lane,
            None,
            lambda: parts.engine.ocr(
                lane,
                call.document,
                mime_type=call.mime_type,
                deadline=deadline,
                meta=meta,
                cache=cache,
            ),
        )
        body = ocr_body(result, len(call.document))
        await parts.reply(ctx, result, body, rate_headers)
