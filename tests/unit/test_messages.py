"""One walk over a chat's text and one estimator: the same estimates as the two they replaced."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from laneway.accounting import chat_usage_or_estimate
from laneway.core.messages import ChatMessage, estimate_tokens, message_texts
from laneway.core.shapes import check_messages
from laneway.core.types import ChatRequest, Usage
from laneway.policy.quota import request_tokens


def usage_estimate_before(messages: Sequence[Mapping[str, Any]]) -> int:
    """``accounting.estimate`` before the walker: joined text, four characters a token."""
    pieces: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            pieces.extend(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return -(-len("".join(str(piece) for piece in pieces)) // 4)


def quota_estimate_before(messages: Sequence[Mapping[str, Any]], max_tokens: int) -> int:
    """``policy.quota.estimate_tokens`` before the walker: content characters, plus max_tokens."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    return math.ceil(chars / 4) + max_tokens


texts = st.text(max_size=40)
parts = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda t: {"type": "refusal", "refusal": t}, texts),
    st.just({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
)
tool_calls = st.lists(
    st.builds(
        lambda args: {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}},
        texts,
    ),
    max_size=2,
)
messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "user", "assistant", "tool"]),
            "content": st.one_of(st.none(), texts, st.lists(parts, max_size=4)),
        },
        optional={"tool_calls": tool_calls, "name": texts},
    ),
    min_size=1,
    max_size=6,
)


@given(messages, st.integers(0, 500))
def test_estimates_are_those_of_the_two_estimators_replaced(
    raw: list[dict[str, Any]], max_tokens: int
) -> None:
    checked = check_messages(raw)
    request = ChatRequest(checked, {"max_tokens": max_tokens})
    assert request_tokens(request) == quota_estimate_before(raw, max_tokens)
    estimated = chat_usage_or_estimate(Usage(), True, checked, "", None)
    assert estimated.prompt_tokens == usage_estimate_before(raw)


def test_the_walk_reads_string_contents_and_text_parts_only() -> None:
    chat: list[ChatMessage] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "refusal"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
    ]
    assert list(message_texts(chat)) == ["be brief", "hi"]


def test_one_token_per_four_characters_of_all_the_texts_together() -> None:
    assert estimate_tokens() == 0
    assert estimate_tokens("abc", "de") == 2
    assert estimate_tokens("abcd") == 1
