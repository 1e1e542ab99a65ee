"""Request ids and the caller headers that travel upstream.

Every answer carries ``X-Request-Id``: the caller's own when it sent one (so
its logs and laneway's telemetry meet on one id), otherwise one laneway made.
The same id is sent upstream and stored in the call's telemetry row, with the
caller's ``OpenAI-Organization`` and ``OpenAI-Project`` headers forwarded to
sources that speak OpenAI's wire format.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from laneway.server.asgi import Message, Send

REQUEST_ID_RULE = "must be 1 to 128 printable ASCII characters (it is kept in telemetry)"
_MAX_ID_LENGTH = 128
_FORWARDED = (
    (b"openai-organization", "openai-organization"),
    (b"openai-project", "openai-project"),
)


def request_id(headers: Mapping[bytes, bytes]) -> tuple[str, bool]:
    """The request's id and whether the caller's (if sent) was usable.

    An unusable id (empty, too long, control or non-ASCII characters) is not
    echoed: a fresh id is returned with ``False`` so the request can be refused.
    """
    sent = headers.get(b"x-request-id")
    if sent is None:
        return fresh_id(), True
    if 0 < len(sent) <= _MAX_ID_LENGTH and all(0x20 < byte < 0x7F for byte in sent):
        return sent.decode("ascii"), True
    return fresh_id(), False


def fresh_id() -> str:
    """32 random hex digits: a uuid4's entropy without building a ``UUID`` (half the cost)."""
    return os.urandom(16).hex()


def tagging_send(send: Send, request_id: str) -> Send:
    """``send`` with ``X-Request-Id`` added to the response head."""
    header = (b"x-request-id", request_id.encode())

    async def tagged(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message["headers"], header]
        await send(message)

    return tagged


def forwarded_headers(headers: Mapping[bytes, bytes], request_id: str) -> dict[str, str]:
    """The headers to send upstream: the request id, and the caller's OpenAI account headers."""
    out = {"x-request-id": request_id}
    for raw, name in _FORWARDED:
        value = headers.get(raw)
        if value is not None:
            out[name] = value.decode("latin-1")
    return out
