"""The `echo_key` token: an upstream that quotes the caller's credential back.

Some providers answer a bad key with "Incorrect API key provided: sk-...". With
`echo_key`, every error answer's message quotes the request's Authorization
header that way, and a streamed answer sends its opening and first content
chunk, then an error event quoting it, and ends without `[DONE]`. A gateway in
front must never pass the credential on.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from laneway.sim._answers import Reply, error_payload, json_reply
from laneway.sim._stream import Step

_EVENTS_BEFORE_ERROR = 2
"""The opening (role) chunk and the first content chunk go out before the error event."""


def echo_key(answer: Reply | Iterator[Step], credential: str) -> Reply | Iterator[Step]:
    """``answer`` with ``credential`` quoted in its error (or an error event appended)."""
    message = f"Incorrect API key provided: {credential}"
    if isinstance(answer, Reply):
        if answer.status < 400:
            return answer
        return json_reply(error_payload(answer.status, message), answer.status, answer.headers)
    return _cut_with_error(answer, message)


def _cut_with_error(steps: Iterator[Step], message: str) -> Iterator[Step]:
    sent = 0
    for step in steps:
        yield step
        sent += isinstance(step, bytes)
        if sent == _EVENTS_BEFORE_ERROR:
            break
    yield b"data: " + orjson.dumps(error_payload(401, message)) + b"\n\n"


def credential(headers: list[tuple[bytes, bytes]]) -> str:
    """The request's Authorization header as text (empty when absent)."""
    return next((v.decode("latin-1") for k, v in headers if k == b"authorization"), "")
