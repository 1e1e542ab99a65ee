"""Rendering engine results in OpenAI's answer shapes."""

from __future__ import annotations

import base64
import struct
from typing import Any

import orjson

from laneway.core.types import EmbeddingResponse


def embeddings_body(result: EmbeddingResponse, packed: bool) -> bytes:
    """The ``/v1/embeddings`` answer; ``packed`` gives base64 float32 vectors.

    The OpenAI SDKs ask for base64 unless told otherwise and unpack it
    themselves, so the engine always fetches floats (to check their length)
    and the gateway packs them here. Unknown usage figures stay ``null``.
    """
    data: list[dict[str, Any]] = [
        {
            "object": "embedding",
            "index": index,
            "embedding": _packed(vector) if packed else vector,
        }
        for index, vector in enumerate(result.vectors)
    ]
    usage = {"prompt_tokens": result.usage.prompt_tokens, "total_tokens": result.usage.total_tokens}
    return orjson.dumps({"object": "list", "data": data, "model": result.model, "usage": usage})


def _packed(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
