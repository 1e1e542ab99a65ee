"""Reservation sizes and request size estimates."""

import pytest

from laneway.core.types import ChatRequest, EmbedRequest, Usage
from laneway.policy.quota import QuotaLimits, request_tokens, used_tokens


def test_without_tpm_nothing_is_reserved() -> None:
    assert QuotaLimits(rpm=10).reservation(500) == 0


def test_est_tokens_wins_over_the_request_size() -> None:
    assert QuotaLimits(tpm=1000, est_tokens=300).reservation(50) == 300


def test_the_request_size_is_used_when_est_tokens_is_unset() -> None:
    assert QuotaLimits(tpm=1000).reservation(50) == 50


@pytest.mark.parametrize(
    ("limits", "expected"),
    [(QuotaLimits(rpm=10, tpm=1000), 100), (QuotaLimits(tpm=600), 10)],
)
def test_an_unsized_request_reserves_its_share_of_the_quota(limits, expected) -> None:
    assert limits.reservation(None) == expected


def test_a_reservation_never_exceeds_the_whole_quota() -> None:
    assert QuotaLimits(tpm=100).reservation(10_000) == 100


def test_estimates() -> None:
    chat = ChatRequest([{"role": "user", "content": "x" * 40}], {"max_tokens": 20})
    parts = ChatRequest([{"role": "user", "content": [{"type": "text", "text": "y" * 8}]}])
    assert request_tokens(chat) == 30
    assert request_tokens(parts) == 2
    assert request_tokens(EmbedRequest(["abcd", "efgh"])) == 2


def test_used_tokens_prefers_the_total_and_never_invents_one() -> None:
    assert used_tokens(Usage(10, 5, 15)) == 15
    assert used_tokens(Usage(10, 5)) == 15
    assert used_tokens(Usage()) is None
