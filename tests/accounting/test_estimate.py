"""Estimated usage: only when nothing was reported, and always marked."""

from __future__ import annotations

from laneway.accounting import chat_usage_or_estimate, embed_usage_or_estimate, estimate_tokens
from laneway.core.messages import ChatMessage
from laneway.core.types import Usage

MESSAGES: list[ChatMessage] = [
    {"role": "system", "content": "12345678"},
    {"role": "user", "content": [{"type": "text", "text": "abcd"}, {"type": "image_url"}]},
]


def test_four_characters_a_token_rounded_up() -> None:
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_missing_chat_usage_is_estimated_and_marked() -> None:
    usage = chat_usage_or_estimate(Usage(), True, MESSAGES, "x" * 8, "y" * 4)
    assert usage == Usage(3, 3, 6, 1, None, source="estimated")


def test_no_reasoning_text_leaves_reasoning_unknown() -> None:
    assert chat_usage_or_estimate(Usage(), True, MESSAGES, "hi", None).reasoning_tokens is None


def test_reported_usage_is_never_touched_even_when_partial() -> None:
    partial = Usage(prompt_tokens=7, source="provider")
    assert chat_usage_or_estimate(partial, True, MESSAGES, "text", None) is partial


def test_estimation_is_off_unless_the_lane_asks() -> None:
    assert chat_usage_or_estimate(Usage(), False, MESSAGES, "text", None) == Usage()
    assert embed_usage_or_estimate(Usage(), False, ["abcd"]) == Usage()


def test_embed_estimate_counts_inputs_only() -> None:
    usage = embed_usage_or_estimate(Usage(), True, ["abcd", "abcdefgh"])
    assert usage == Usage(3, None, 3, None, None, source="estimated")
