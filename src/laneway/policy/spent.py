"""Whether a failed call spent its lane's budget: the gateway's ``x-should-retry`` rule.

A caller's SDK retries a 408, 409, 429 or 5xx on its own (the OpenAI SDK's
``max_retries=2``, the Anthropic SDK's alike) unless the answer carries
``x-should-retry: false``. A lane already retried as it declared, so an SDK
retry on top of it multiplies the lane's upstream requests and outlives its
deadline. ``budget_spent`` is the one decision: the server answers
``x-should-retry: false`` exactly when it is true, so a caller on its SDK's
defaults makes no more upstream requests than ``laneway check`` bounds.
"""

from __future__ import annotations

from laneway.core.errors import CallFailed, DeadlineExceeded, Stalled
from laneway.core.failures import FailureKind
from laneway.core.types import Attempt

NOT_SENT = frozenset({FailureKind.UNSUPPORTED.value, "not_ready"})
"""Attempt outcomes that sent nothing upstream: a skipped source, a lane not ready."""


def sent(attempts: tuple[Attempt, ...]) -> int:
    """How many of ``attempts`` were upstream requests."""
    return sum(attempt.outcome not in NOT_SENT for attempt in attempts)


def budget_spent(error: CallFailed) -> bool:
    """Whether retrying ``error``'s call would repeat what its lane already spent.

    True when the call made an upstream request (the lane made every retry
    its policy allows, or gave up on a failure that retrying cannot cure), or
    when it ended on its deadline (passed, or no room left for an attempt) or
    a stall. False only for a call that a local wait (a Retry-After mark, a
    quota) ended before anything was sent: a retry after that wait can succeed.
    """
    return sent(error.attempts) > 0 or isinstance(error, DeadlineExceeded | Stalled)
