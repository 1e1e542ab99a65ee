"""The headers every answer carries, and Mistral's OCR answer as the gateway serves it.

The bodies of chat and embeddings answers are their wire formats' (``laneway.wire``).

Usage in a body is what the call's ``Usage`` knows, never more: the
upstream's own figures, or an estimate on a lane with
``estimate_missing_usage``; when neither exists the body has no ``usage`` at
all, not zeros and not nulls. ``X-Laneway-Usage`` (``provider``,
``estimated``, ``none``) says whose figures they are, since OpenAI's shape
cannot. On a response-cache hit the usage is that of the call first made.
"""

from __future__ import annotations

import orjson

from laneway.core.types import CacheStatus, OCRResponse, Usage
from laneway.server.asgi import Headers
from laneway.server.errors import call_headers
from laneway.wire.mistral_ocr import ocr_response_body


def answer_headers(
    lane: str,
    source: str | None,
    attempts: int,
    cache: CacheStatus,
    usage: Usage | None,
) -> Headers:
    """``call_headers`` plus ``X-Laneway-Cache``, and ``X-Laneway-Usage`` when known.

    A stream's head goes out before its usage exists, so streams pass
    ``usage=None`` and send no ``X-Laneway-Usage``.
    """
    headers = [*call_headers(lane, source, attempts), (b"x-laneway-cache", cache.encode())]
    if usage is not None:
        headers.append((b"x-laneway-usage", usage.source.encode()))
    return headers


def ocr_body(result: OCRResponse, document_bytes: int) -> bytes:
    """The Mistral-shaped ``/v1/ocr`` answer, without ``usage`` when usage is unknown."""
    body = ocr_response_body(result, document_bytes)
    if not result.usage.known:
        del body["usage"]
    return orjson.dumps(body)
