"""OpenAI's Responses API (``POST /v1/responses``), its text and tools subset, on chat lanes.

The request is read by ``laneway.wire.responses.request_reader`` (which says
what is translated and what refused); the answer and its stream are written
by ``wire.responses.answer``, stamped with the time the call was read.
Errors are OpenAI's shape, as on ``/v1/chat/completions``.
"""

from __future__ import annotations

import time
from typing import Any

from laneway.core.types import LLMResponse
from laneway.server.dialect import Dialect, Forwarded, InboundChat, refusing_malformed
from laneway.server.errors import describe_error, error_reply, internal_error_reply
from laneway.wire.responses.answer import ResponsesEventWriter, response_body
from laneway.wire.responses.request_reader import read_response_request


class ResponsesEncoder(ResponsesEventWriter):
    """The Responses API's stream events; a failure after the head is an ``error`` event."""

    def failed(self, exc: Exception, lane: str) -> bytes:
        """An ``error`` event (the stream ends without ``response.completed``)."""
        return self.error(describe_error(exc, lane)[1])


def _read(data: dict[str, Any], forwarded: Forwarded) -> InboundChat:
    call = read_response_request(data, forwarded)
    echo = call.echo

    def written(result: LLMResponse) -> bytes:
        return response_body(echo, result, time.time())

    return InboundChat(
        call.request,
        call.stream,
        refusing_malformed(written),
        lambda: ResponsesEncoder(echo, time.time()),
    )


RESPONSES = Dialect(_read, error_reply, internal_error_reply)
"""``POST /v1/responses``: the Responses API's request, answer, stream and error shapes."""
