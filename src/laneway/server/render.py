"""Rendering engine results in OpenAI's (and Mistral's) answer shapes.

Usage in a body is what the call's ``Usage`` knows, never more: the
upstream's own figures, or an estimate on a lane with
``estimate_missing_usage``; when neither exists the body has no ``usage`` at
all, not zeros and not nulls. ``X-Laneway-Usage`` (``provider``,
``estimated``, ``none``) says whose figures they are, since OpenAI's shape
cannot. On a response-cache hit the usage is that of the call first made.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.types import CacheStatus, EmbeddingResponse, LLMResponse, OCRResponse, Usage
from laneway.core.usage import openai_usage_dict
from laneway.server.asgi import Headers
from laneway.server.errors import call_headers
from laneway.server.ocr_mistral import ocr_response_body


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


def chat_body(result: LLMResponse) -> bytes:
    """The ``/v1/chat/completions`` answer: the upstream's, usage as the call knows it.

    Upstream figures stay as the upstream sent them (details included); an
    estimate is written in OpenAI's shape; a ``usage: null`` goes.
    """
    raw = result.raw
    usage = result.usage
    if usage.source == "estimated" or ("usage" in raw and raw["usage"] is None):
        raw = {k: v for k, v in raw.items() if k != "usage"}
        if usage.source == "estimated":
            raw["usage"] = openai_usage_dict(usage)
    return orjson.dumps(raw)


def embeddings_body(result: EmbeddingResponse) -> bytes:
    """The ``/v1/embeddings`` answer, each vector in the encoding its caller asked.

    The vectors come encoded (``EmbeddingResponse.encoded``): base64 strings
    as the upstream sent them, float arrays as the upstream's JSON text
    (``orjson.Fragment`` writes them without parsing). Unknown usage is left
    out; unknown figures of known usage stay ``null``.
    """
    data: list[dict[str, Any]] = [
        {
            "object": "embedding",
            "index": index,
            "embedding": orjson.Fragment(v.text) if v.encoding == "float" else v.text,
        }
        for index, v in enumerate(result.encoded)
    ]
    body: dict[str, Any] = {"object": "list", "data": data, "model": result.model}
    if result.usage.known:
        usage = result.usage
        body["usage"] = {"prompt_tokens": usage.prompt_tokens, "total_tokens": usage.total_tokens}
    return orjson.dumps(body)


def ocr_body(result: OCRResponse, document_bytes: int) -> bytes:
    """The Mistral-shaped ``/v1/ocr`` answer, without ``usage`` when usage is unknown."""
    body = ocr_response_body(result, document_bytes)
    if not result.usage.known:
        del body["usage"]
    return orjson.dumps(body)
