"""Reading what a request says beside its body: its bounds, its deadline, its cache wishes.

The bodies themselves are read by their wire formats (``laneway.wire``);
what depends on the lane or on the caller's headers is read here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from laneway.core.errors import RequestInvalid, RequestTooLarge
from laneway.core.types import CacheControl, EmbedInput
from laneway.engine.embedding import BYTES_PER_FLOAT, BYTES_PER_ITEM
from laneway.engine.settings import LaneSettings
from laneway.wire.openai.embeddings import EmbedCall

_TOTAL_TIMEOUTS = (
    (b"x-laneway-deadline-ms", 0.001, "X-Laneway-Deadline-Ms"),
    (b"x-stainless-timeout", 1.0, None),
)
_ALL_TIMEOUTS = (*_TOTAL_TIMEOUTS, (b"x-stainless-read-timeout", 1.0, None))


def _input_bytes(item: EmbedInput) -> int:
    """Bytes of a text; a token array counts its tokens (each at least one byte of text)."""
    return len(item.encode()) if isinstance(item, str) else len(item)


def check_embed_bounds(call: EmbedCall, lane: LaneSettings) -> None:
    """Refuse (413) an embeddings request over its lane's bounds, before any upstream call.

    Input bytes are counted in characters first: a count over the bound is
    over it in bytes too, and one at most a quarter of it cannot be (UTF-8
    takes at most 4 bytes a character), so only texts in between are encoded.
    The answer is estimated when the vector length is known (pinned by the
    lane or asked by the request): ``BYTES_PER_FLOAT`` a float in JSON, 4/3
    of 4 bytes in base64, plus each item's envelope.
    """
    inputs = call.request.inputs
    if len(inputs) > lane.max_inputs:
        raise RequestTooLarge(
            "input",
            f"holds {len(inputs)} texts; this lane takes at most {lane.max_inputs} (max_inputs)",
        )
    limit = lane.max_input_bytes
    size = sum(map(len, inputs))
    if limit < size * 4:
        size = size if size > limit else sum(map(_input_bytes, inputs))
        if size > limit:
            raise RequestTooLarge(
                "input",
                f"is over {limit} bytes of text; this lane takes at most that (max_input_bytes)",
            )
    dimensions = call.request.dimensions or lane.dimensions
    if dimensions is None:
        return
    per_float = 16 / 3 if call.base64 else BYTES_PER_FLOAT
    answer = len(inputs) * (math.ceil(dimensions * per_float) + BYTES_PER_ITEM)
    if answer > lane.max_answer_bytes:
        raise RequestTooLarge(
            "input",
            f"{len(inputs)} vectors of {dimensions} floats would be about {answer} "
            f"bytes, over this lane's max_answer_bytes ({lane.max_answer_bytes})",
        )


def caller_deadline(
    headers: Mapping[bytes, bytes], margin: float, *, streaming: bool
) -> float | None:
    """Seconds the caller will wait, less ``margin``; ``None`` when it sent no bound.

    ``X-Laneway-Deadline-Ms`` and ``X-Stainless-Timeout`` bound the whole call.
    The OpenAI Python SDK's ``X-Stainless-Read-Timeout`` bounds each read, which
    for a non-streamed answer is the whole wait; for a stream it is not, so it
    is ignored there. The tightest bound wins. The SDKs' own headers are read
    where they hold a number and skipped otherwise (the Anthropic SDK sends
    ``NOT_GIVEN`` when no timeout was set); laneway's header must be valid.
    """
    bound = math.inf
    for key, scale, name in _TOTAL_TIMEOUTS if streaming else _ALL_TIMEOUTS:
        raw = headers.get(key)
        seconds = None if raw is None else _seconds(raw)
        if seconds is not None:
            bound = min(bound, seconds * scale)
        elif raw is not None and name is not None:
            raise RequestInvalid(name, "must be a positive number")
    return None if bound == math.inf else max(bound - margin, 0.0)


def _seconds(raw: bytes) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 and not math.isinf(value) else None


def cache_control(headers: Mapping[bytes, bytes]) -> CacheControl | None:
    """The request's ``Cache-Control`` as far as the response cache reads it.

    ``no-store`` wins over ``no-cache`` when both are sent; other directives
    (``max-age``...) are not the response cache's and are ignored.
    """
    raw = headers.get(b"cache-control")
    if raw is None:
        return None
    directives = {part.strip().split(b"=")[0].lower() for part in raw.split(b",")}
    if b"no-store" in directives:
        return "no-store"
    if b"no-cache" in directives:
        return "no-cache"
    return None
