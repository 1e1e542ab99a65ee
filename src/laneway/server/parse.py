"""Reading OpenAI-shaped requests by hand: each error names the offending field.

Bodies are checked with plain ``isinstance`` tests, not a schema library: it
is the cheapest check that still answers a wrong body with a 400 naming the
field. Fields laneway does not know pass through to the upstream untouched;
known fields of the wrong type are refused here rather than upstream. The
shapes laneway reads inside fields (messages and their content parts, tool
definitions) and the nesting depth of the whole body are checked by
``laneway.core.shapes``, which other endpoints reuse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from laneway.config.models import LaneConfig
from laneway.core.errors import RequestInvalid, RequestTooLarge
from laneway.core.shapes import chat_request, check_depth, check_strings, check_tools
from laneway.core.types import CacheControl, ChatRequest, EmbedInput, EmbedRequest
from laneway.core.vectors import VectorEncoding
from laneway.engine.embedding import BYTES_PER_FLOAT, BYTES_PER_ITEM

_NUMBER = ((int, float), "a number")
_INTEGER = ((int,), "an integer")
_BOOLEAN = ((bool,), "a boolean")
_STRING = ((str,), "a string")
_OBJECT = ((dict,), "an object")
_LIST = ((list,), "a list")

FieldTypes = Mapping[str, tuple[tuple[type, ...], str]]

CHAT_FIELDS: FieldTypes = {
    "stream": _BOOLEAN,
    "stream_options": _OBJECT,
    "temperature": _NUMBER,
    "top_p": _NUMBER,
    "frequency_penalty": _NUMBER,
    "presence_penalty": _NUMBER,
    "max_tokens": _INTEGER,
    "max_completion_tokens": _INTEGER,
    "n": _INTEGER,
    "seed": _INTEGER,
    "top_logprobs": _INTEGER,
    "logprobs": _BOOLEAN,
    "parallel_tool_calls": _BOOLEAN,
    "stop": ((str, list), "a string or a list of strings"),
    "tools": _LIST,
    "tool_choice": ((str, dict), "a string or an object"),
    "response_format": _OBJECT,
    "logit_bias": _OBJECT,
    "metadata": _OBJECT,
    "user": _STRING,
    "reasoning_effort": _STRING,
}
EMBED_FIELDS: FieldTypes = {
    "dimensions": _INTEGER,
    "encoding_format": _STRING,
    "user": _STRING,
}
_ENCODINGS = ("float", "base64")
MAX_CHOICES = 128
"""The most ``n`` any provider takes (OpenAI's API: 1 to 128; Gemini's ``candidateCount`` fewer)."""

_TOTAL_TIMEOUTS = (
    (b"x-laneway-deadline-ms", 0.001, "X-Laneway-Deadline-Ms"),
    (b"x-stainless-timeout", 1.0, None),
)
_ALL_TIMEOUTS = (*_TOTAL_TIMEOUTS, (b"x-stainless-read-timeout", 1.0, None))


@dataclass(frozen=True, slots=True)
class ChatCall:
    """A validated chat request and how the caller wants it delivered."""

    request: ChatRequest
    stream: bool
    include_usage: bool


@dataclass(frozen=True, slots=True)
class EmbedCall:
    """A validated embeddings request; ``base64`` asks for packed float32 vectors."""

    request: EmbedRequest
    base64: bool


def json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object nested at most ``MAX_DEPTH`` levels, else ``RequestInvalid``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RequestInvalid("body", f"is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise RequestInvalid("body", "must be a JSON object")
    check_depth(data)
    return data


def lane_name(data: Mapping[str, Any]) -> str:
    """The ``model`` field, which names the lane."""
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise RequestInvalid("model", "must be a non-empty string naming a lane")
    return model


def chat_call(data: dict[str, Any], forwarded: Mapping[str, str]) -> ChatCall:
    """Validate a ``/v1/chat/completions`` body (its ``model`` already read).

    ``data`` is consumed: what remains of it becomes the upstream parameters;
    ``forwarded`` are the caller's headers to send upstream.
    """
    check_types(data, CHAT_FIELDS)
    check_tools(data.get("tools"))
    check_strings(data.get("stop"), "stop")
    choices = data.get("n")
    if choices is not None and not 1 <= choices <= MAX_CHOICES:
        raise RequestInvalid("n", f"must be between 1 and {MAX_CHOICES}, got {choices}")
    options = data.get("stream_options") or {}
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise RequestInvalid("stream_options.include_usage", "must be a boolean")
    stream = data.get("stream") is True
    del data["model"]
    request = chat_request(data.pop("messages", None), data, forwarded)
    return ChatCall(request, stream, include_usage)


def embed_call(data: dict[str, Any], forwarded: Mapping[str, str]) -> EmbedCall:
    """Validate a ``/v1/embeddings`` body (its ``model`` already read).

    ``data`` is consumed: what remains of it becomes the upstream parameters;
    ``forwarded`` are the caller's headers to send upstream.
    """
    check_types(data, EMBED_FIELDS)
    dimensions = data.pop("dimensions", None)
    if dimensions is not None and dimensions <= 0:
        raise RequestInvalid("dimensions", "must be a positive integer")
    encoding: VectorEncoding = data.pop("encoding_format", None) or "float"
    if encoding not in _ENCODINGS:
        raise RequestInvalid("encoding_format", "must be 'float' or 'base64'")
    inputs = _inputs(data.pop("input", None))
    del data["model"]
    request = EmbedRequest(inputs, dimensions, data, forwarded, encoding)
    return EmbedCall(request, encoding == "base64")


def _inputs(value: object) -> list[EmbedInput]:
    """``input`` as a list of texts and token arrays (OpenAI takes one or a list of either)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        raise RequestInvalid(
            "input", "must be a string, a token array, or a non-empty list of them"
        )
    if all(_is_token(item) for item in value):
        return [value]
    for index, item in enumerate(value):
        if not isinstance(item, str) and not _is_token_array(item):
            message = "must be a string or a non-empty array of token ids (integers)"
            raise RequestInvalid(f"input[{index}]", message)
    return value


def _is_token(item: object) -> bool:
    return isinstance(item, int) and not isinstance(item, bool) and item >= 0


def _is_token_array(item: object) -> bool:
    return isinstance(item, list) and bool(item) and all(_is_token(token) for token in item)


def _input_bytes(item: EmbedInput) -> int:
    """Bytes of a text; a token array counts its tokens (each at least one byte of text)."""
    return len(item.encode()) if isinstance(item, str) else len(item)


def check_embed_bounds(call: EmbedCall, lane: LaneConfig) -> None:
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


def check_types(data: Mapping[str, Any], fields: FieldTypes) -> None:
    """Refuse a known field of the wrong type (``null`` means absent, as OpenAI reads it)."""
    for name, value in data.items():
        expected = fields.get(name)
        if expected is None or value is None:
            continue
        kinds, what = expected
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise RequestInvalid(name, f"must be {what}")


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
