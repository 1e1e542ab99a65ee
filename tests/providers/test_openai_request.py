"""The body ``OpenAIProvider`` sends upstream for a chat call."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from laneway.core.messages import ChatMessage
from laneway.core.types import ChatRequest
from laneway.providers.openai import OpenAIProvider

HI: list[ChatMessage] = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("options", "sent"),
    [
        (None, {"include_usage": True}),
        ({"include_usage": False}, {"include_usage": True}),
        ({"other": 1}, {"other": 1, "include_usage": True}),
    ],
)
def test_a_stream_asks_for_usage_whatever_options_the_caller_sent(
    options: dict[str, Any] | None, sent: dict[str, Any]
) -> None:
    """A caller's ``"stream_options": null`` is no options (it was a 500, found by the fuzz)."""
    provider = OpenAIProvider("http://up/v1", "m", None)
    request = ChatRequest(HI, {"stream_options": options})
    body = orjson.loads(provider.chat_request(request, stream=True).body)
    assert body["stream"] is True and body["stream_options"] == sent
