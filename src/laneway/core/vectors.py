"""Embedding vectors kept in OpenAI's wire encodings, so a relay never rebuilds them.

A library call wants Python floats. A gateway call relays vectors to a caller
who asked for ``encoding_format`` ``float`` (a JSON array) or ``base64``
(little-endian float32): turning 64 × 1,536 numbers into Python floats and
back costs several times what moving the bytes does. An ``EncodedVector`` is
one vector in the caller's encoding with its length already counted, so the
dimension pin is checked without decoding it; ``encoded`` and ``floats``
convert between the forms when they must (a provider that only speaks floats,
a cache entry, a library caller).
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Literal

import orjson

VectorEncoding = Literal["float", "base64"]
"""OpenAI's ``encoding_format``: a JSON array of numbers, or base64 of float32s."""

BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@dataclass(frozen=True, slots=True)
class EncodedVector:
    """One vector as the caller will receive it: ``text`` is the JSON array or base64 string.

    ``length`` is the number of floats it holds, counted when it was read.
    """

    encoding: VectorEncoding
    text: str | bytes
    length: int


Vector = list[float] | EncodedVector
"""A vector as a provider parsed it: Python floats, or kept encoded (``EncodedVector``)."""


def vector_length(vector: Vector) -> int:
    """How many floats ``vector`` holds."""
    return vector.length if isinstance(vector, EncodedVector) else len(vector)


def encoded(vector: Vector, encoding: VectorEncoding) -> EncodedVector:
    """``vector`` in ``encoding``, converted only when it is in another form."""
    if isinstance(vector, EncodedVector):
        if vector.encoding == encoding:
            return vector
        vector = floats(vector)
    if encoding == "base64":
        packed = struct.pack(f"<{len(vector)}f", *vector)
        return EncodedVector("base64", base64.b64encode(packed).decode(), len(vector))
    return EncodedVector("float", orjson.dumps(vector), len(vector))


def floats(vector: Vector) -> list[float]:
    """``vector`` as Python floats (base64 float32s widen exactly)."""
    if not isinstance(vector, EncodedVector):
        return vector
    if vector.encoding == "base64":
        raw = base64.b64decode(vector.text)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    values = orjson.loads(vector.text)
    if not isinstance(values, list):
        raise ValueError("an encoded float vector is not a JSON array")
    return values


def base64_length(text: str) -> int | None:
    """Floats in a base64 float32 vector, from its length and alphabet alone; ``None`` if invalid.

    Base64 of ``4·d`` bytes is ``4·⌈4d/3⌉`` characters with at most two ``=``
    of padding, so the count needs no decoding; the alphabet check (one C
    pass) refuses a string a client could not decode to that many floats.
    """
    return base64_bytes_length(text.encode("ascii", "replace"))


def base64_bytes_length(raw: bytes) -> int | None:
    """``base64_length`` of a vector still in the bytes it came in."""
    body = raw.rstrip(b"=")
    padding = len(raw) - len(body)
    if len(raw) % 4 or padding > 2 or body.translate(None, BASE64_ALPHABET):
        return None
    size = len(raw) // 4 * 3 - padding
    return None if size % 4 else size // 4


def conformed(vector: Vector, encoding: VectorEncoding | None) -> Vector:
    """``vector`` in the form a call asked for: Python floats (``None``) or ``encoding``."""
    return floats(vector) if encoding is None else encoded(vector, encoding)
