"""One definition of each status set (``laneway.core.failures``), read by every layer.

Before, the config's rejections lacked 413 while the providers' had it, so
``retry_on: [413]`` validated yet could never fire; the fallback knew only
400/422 and the pushback statuses were written twice.
"""

from __future__ import annotations

import pytest

from laneway.config import parse_config
from laneway.core.errors import ConfigError, UpstreamRejected
from laneway.core.failures import (
    PUSHBACK_STATUSES,
    REJECTION_STATUSES,
    REQUEST_REJECTION_STATUSES,
    FailureKind,
)
from laneway.core.types import Attempt
from laneway.engine.fallback import falls_back
from laneway.providers.base import classify_status


def _lane(retry_on: str) -> str:
    return (
        "lanes:\n  l:\n    retries: 1\n"
        f"    retry_on: {retry_on}\n"
        "    sources:\n      - {base_url: 'http://127.0.0.1:1', model: m}\n"
    )


def _rejected(status: int) -> UpstreamRejected:
    attempt = Attempt("s", str(status), 0.1, status=status)
    return UpstreamRejected("rejected", lane="l", attempts=(attempt,), elapsed=0.1)


@pytest.mark.parametrize("status", sorted(REJECTION_STATUSES))
def test_every_rejection_the_providers_classify_is_refused_in_retry_on(status: int) -> None:
    assert classify_status(status, {}, b"{}", 0.0).kind is FailureKind.REJECTED
    with pytest.raises(ConfigError, match=f"{status} is a rejection"):
        parse_config(_lane(f"[{status}]"))


def test_413_can_no_longer_be_listed_in_retry_on() -> None:
    with pytest.raises(ConfigError, match="413 is a rejection"):
        parse_config(_lane("[413]"))


@pytest.mark.parametrize("status", sorted(REJECTION_STATUSES))
def test_fallback_skips_exactly_the_requests_own_rejections(status: int) -> None:
    assert falls_back(_rejected(status)) is (status not in REQUEST_REJECTION_STATUSES)


def test_the_sets_nest() -> None:
    assert REQUEST_REJECTION_STATUSES < REJECTION_STATUSES
    assert not PUSHBACK_STATUSES & REJECTION_STATUSES
    assert all(
        classify_status(s, {}, b"{}", 0.0).kind is FailureKind.STATUS for s in PUSHBACK_STATUSES
    )
