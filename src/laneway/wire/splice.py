"""A JSON body's ``model`` rewritten in its bytes, everything else as it came.

The pass-through fast path sends a caller's body to a source of the same wire
format with the source's model. The key is found by pattern: ``"model"``
followed by a colon can only be a key (a quote inside a JSON string is
escaped), so exactly one such key is the body's own (a nested ``model`` key,
in metadata or a tool's schema, makes two, and the body is then written
afresh by its format's writer, never guessed at).
"""

from __future__ import annotations

import re

import orjson

_MODEL_KEY = re.compile(rb'"model"\s*:')
_MODEL_VALUE = re.compile(rb'"model"\s*:\s*("(?:[^"\\]|\\.)*")')


def with_model(body: bytes, model: str) -> bytes | None:
    """``body`` with its one ``model`` key's string value set to ``model``; ``None`` if not one."""
    found = _MODEL_VALUE.search(body)
    if found is None or len(_MODEL_KEY.findall(body)) != 1:
        return None
    return b"".join((body[: found.start(1)], orjson.dumps(model), body[found.end(1) :]))
