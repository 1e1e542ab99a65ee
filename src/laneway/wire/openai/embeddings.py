"""OpenAI's embeddings: a caller's request read, a source's request written, answers both ways.

An answer's vectors are kept as they came when a relay asks; a base64
answer whose items are in order goes back to its caller as it came
(``EmbedResult.body``), once its strings are counted and checked.

Decoding 64 × 1,536 JSON numbers into Python floats and writing them out
again cost a relay ~4 ms of CPU a call, more than moving the 2 MB does. When
the caller wants JSON floats, each ``"embedding": [...]`` array is cut out of
the body as bytes and counted (its commas), and only the rest of the body is
parsed; when it wants base64, the upstream was asked for base64 and each
``"embedding": "..."`` string is cut out alike, its length giving its float
count and one C pass its alphabet. Anything irregular (whitespace inside
an array, another key named ``embedding``, arrays that do not map one to one
onto ``data``) falls back to a full parse, never to a guess.

The cut arrays are checked to hold only number characters and commas; the
digits of each number are the upstream's, relayed as sent (``_plain_array``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, RequestInvalid
from laneway.core.failures import FailureKind
from laneway.core.passthrough import OPENAI_EMBEDDINGS, AnswerBody
from laneway.core.results import EmbedResult
from laneway.core.types import EmbeddingResponse, EmbedInput, EmbedRequest
from laneway.core.vectors import (
    EncodedVector,
    Vector,
    VectorEncoding,
    base64_bytes_length,
    base64_length,
)
from laneway.wire.decoding import load_json
from laneway.wire.openai.chat_answer import openai_usage
from laneway.wire.openai.chat_request import FieldTypes, check_types

_KEY = b'"embedding"'
_OPENERS = {"float": re.compile(rb"\s*:\s*\["), "base64": re.compile(rb'\s*:\s*"')}
"""What follows ``"embedding"`` before a vector of each encoding (an array, a string)."""
_NUMBER_CHARS = b"0123456789.eE+-"
_WHITESPACE = b" \t\n\r"
EMBED_FIELDS: FieldTypes = {
    "dimensions": ((int,), "an integer"),
    "encoding_format": ((str,), "a string"),
    "user": ((str,), "a string"),
}
_ENCODINGS = ("float", "base64")


@dataclass(frozen=True, slots=True)
class EmbedCall:
    """A validated embeddings request; ``base64`` asks for packed float32 vectors."""

    request: EmbedRequest
    base64: bool


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


def embed_request_body(request: EmbedRequest, model: str) -> bytes:
    """The body for a source; ``dimensions`` is sent when the lane pins it.

    Token arrays go as they came: OpenAI-compatible embeddings APIs take them.
    A caller who wants base64 gets the upstream's base64 (a quarter of the
    bytes, relayed as sent).
    """
    body: dict[str, Any] = {**request.params, "model": model, "input": request.inputs}
    if request.dimensions is not None:
        body["dimensions"] = request.dimensions
    if request.encoding == "base64":
        body["encoding_format"] = "base64"
    return orjson.dumps(body)


def embeddings_body(result: EmbeddingResponse) -> bytes:
    """The ``/v1/embeddings`` answer, each vector in the encoding its caller asked.

    The vectors come encoded (``EmbeddingResponse.encoded``): base64 strings
    as the upstream sent them, float arrays as the upstream's JSON text
    (``orjson.Fragment`` writes them without parsing). Unknown usage is left
    out; unknown figures of known usage stay ``null``. The one upstream
    answer that holds every vector in order, with the upstream's usage, goes
    back as it came (``EmbeddingResponse.answer_body``).
    """
    relayed = result.answer_body
    if (
        relayed is not None
        and relayed.wire == OPENAI_EMBEDDINGS
        and result.usage.source == "provider"
    ):
        return relayed.body
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


def read_embedding_list(body: bytes, encoding: VectorEncoding | None, model: str) -> EmbedResult:
    """An embeddings answer: its vectors (see ``answer_vectors``), usage and model.

    A base64 answer whose items are in ``index`` order, with its model and
    usage, keeps its bytes (``EmbedResult.body``) for a caller of this format.
    """
    data, vectors, in_order = _read(body, encoding)
    usage = openai_usage(data.get("usage"))
    result = EmbedResult(vectors, usage, str(data.get("model") or model))
    if in_order and encoding == "base64" and usage.known and isinstance(data.get("model"), str):
        result.body = AnswerBody(OPENAI_EMBEDDINGS, body)
    return result


def answer_vectors(
    body: bytes, encoding: VectorEncoding | None
) -> tuple[dict[str, Any], list[Vector]]:
    """The answer's fields and its vectors in ``index`` order.

    A vector stays encoded when it came in the caller's ``encoding`` (cut
    JSON arrays for ``float``, strings for ``base64``); otherwise it is a list
    of Python floats for the engine to convert.
    """
    data, vectors, _ = _read(body, encoding)
    return data, vectors


def _read(
    body: bytes, encoding: VectorEncoding | None
) -> tuple[dict[str, Any], list[Vector], bool]:
    """``answer_vectors``, and whether the items were cut out in ``index`` order, 0 to n-1."""
    cut = _cut_vectors(body, encoding) if encoding is not None else None
    data = load_json(cut[0] if cut else body, "embeddings answer")
    items = data.get("data")
    if not isinstance(items, list):
        raise AttemptFailure(FailureKind.MALFORMED, "embeddings answer has no data list")
    try:
        ordered = sorted(items, key=lambda item: int(item.get("index", 0)))
        embeddings = [item["embedding"] for item in ordered]
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise AttemptFailure(
            FailureKind.MALFORMED, f"embeddings answer is malformed: {exc}"
        ) from exc
    if cut is not None:
        placed = _placed(embeddings, cut[1])
        if placed is not None:
            in_order = all(
                item.get("index") == position and value == [position]
                for position, (item, value) in enumerate(zip(items, embeddings, strict=True))
            )
            return data, placed, in_order
        return _read(body, None)
    return data, [_vector(index, value) for index, value in enumerate(embeddings)], False


def _vector(index: int, value: object) -> Vector:
    """One ``embedding`` value: a list of numbers, or a base64 string of float32s."""
    if isinstance(value, str):
        length = base64_length(value)
        if length is None:
            message = f"embedding {index} is not base64 of little-endian float32s"
            raise AttemptFailure(FailureKind.MALFORMED, message)
        return EncodedVector("base64", value, length)
    if not isinstance(value, list):
        message = f"embedding {index} is neither a list of numbers nor base64"
        raise AttemptFailure(FailureKind.MALFORMED, message)
    return value


def _cut_vectors(body: bytes, encoding: VectorEncoding) -> tuple[bytes, list[EncodedVector]] | None:
    """``body`` with each ``embedding`` vector replaced by ``[n]`` (its ordinal), and the vectors.

    ``None`` when a vector is not plain (see the module docstring; a base64
    string that is not whole float32s): the caller then parses the whole body.
    """
    opener = _OPENERS[encoding]
    pieces: list[bytes] = []
    vectors: list[EncodedVector] = []
    position = 0
    search = 0
    while (key := body.find(_KEY, search)) >= 0:
        search = key + len(_KEY)
        opened = opener.match(body, search)
        if opened is None:
            continue  # the value of "object": "embedding", not a key
        start = opened.end()
        end = body.find(b"]" if encoding == "float" else b'"', start)
        if end < 0:
            return None
        vector = (
            _plain_array(body[start - 1 : end + 1])
            if encoding == "float"
            else _plain_string(body[start:end])
        )
        if vector is None:
            return None
        pieces += (body[position : start - 1], b"[", str(len(vectors)).encode(), b"]")
        vectors.append(vector)
        position = search = end + 1
    pieces.append(body[position:])
    return b"".join(pieces), vectors


def _plain_string(text: bytes) -> EncodedVector | None:
    """A base64 string's contents as a vector; ``None`` unless it is whole float32s.

    Its alphabet is checked before it is decoded, so the text is ASCII.
    """
    length = base64_bytes_length(text)
    return None if length is None else EncodedVector("base64", text.decode("ascii"), length)


def _plain_array(array: bytes) -> EncodedVector | None:
    """A JSON array ``[...]`` as a float vector without whitespace; ``None`` unless all numbers.

    One C pass (``bytes.translate``), no Python object per number: what is
    left after deleting number characters must be the brackets and commas
    (whitespace is dropped: OpenAI pretty-prints its answers, and the caller
    then receives fewer bytes). The count is the commas plus one. The
    numbers' own syntax is the upstream's: a malformed one (``1.2.3``, an
    empty element) makes the whole answer invalid JSON, which a client
    refuses, so it can never become a vector of another length.
    """
    separators = array.translate(None, _NUMBER_CHARS)
    commas = len(separators) - 2
    if separators.count(b",") != commas:
        array = array.translate(None, _WHITESPACE)
        separators = array.translate(None, _NUMBER_CHARS)
        commas = len(separators) - 2
        if separators.count(b",") != commas:
            return None
    length = commas + 1 if len(array) > 2 else 0
    return EncodedVector("float", array, length)


def _placed(embeddings: list[Any], arrays: list[EncodedVector]) -> list[Vector] | None:
    """Each item's cut array by its ordinal; ``None`` unless they map one to one."""
    if len(embeddings) != len(arrays):
        return None
    placed: list[Vector] = []
    seen: set[int] = set()
    for value in embeddings:
        if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], int)):
            return None
        ordinal = value[0]
        if ordinal in seen or not 0 <= ordinal < len(arrays):
            return None
        seen.add(ordinal)
        placed.append(arrays[ordinal])
    return placed
