"""Anthropic's Messages API (``POST /v1/messages``) on any chat lane.

The request is read by ``laneway.wire.anthropic.request_reader`` into a
chat request, so the ``anthropic`` SDKs (and tools built on them) work
against a lane whatever its sources speak; the answer, its stream and its
errors are written in Anthropic's shapes (``wire.anthropic.answer`` and
``events``), with laneway's account of the call (``"laneway": {...}``) beside
an error, so the SDKs raise their usual exceptions.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.server.asgi import Reply
from laneway.server.dialect import Dialect, Forwarded, InboundChat, refusing_malformed
from laneway.server.errors import describe_error, internal_error_reply
from laneway.wire.anthropic.answer import anthropic_error_body, message_body
from laneway.wire.anthropic.events import MessagesEventWriter
from laneway.wire.anthropic.request_reader import read_messages


class AnthropicEncoder(MessagesEventWriter):
    """Anthropic's stream events; a failure after the head is an ``error`` event."""

    def failed(self, exc: Exception, lane: str) -> bytes:
        """An ``error`` event, which the SDKs raise as an API error."""
        status, body, _ = describe_error(exc, lane)
        return self.error(status, body)


def _read(data: dict[str, Any], forwarded: Forwarded) -> InboundChat:
    """A Messages call; its body goes to an Anthropic source as sent when it may."""
    request = read_messages(data, forwarded)
    stream = data.get("stream") is True
    return InboundChat(request, stream, refusing_malformed(message_body), AnthropicEncoder)


def anthropic_error(exc: Exception, lane: str) -> Reply:
    """The error answer in Anthropic's shape, with laneway's account of the call beside it."""
    status, body, headers = describe_error(exc, lane)
    return Reply(status, orjson.dumps(anthropic_error_body(status, body)), headers)


def anthropic_crash(lane: str, request_id: str) -> Reply:
    """The 500 for an unexpected exception, in Anthropic's shape."""
    reply = internal_error_reply(lane, request_id)
    body = anthropic_error_body(500, orjson.loads(reply.body))
    return Reply(500, orjson.dumps(body), reply.headers)


ANTHROPIC_MESSAGES = Dialect(_read, anthropic_error, anthropic_crash)
"""``POST /v1/messages``: Anthropic's request, answer, stream and error shapes."""
