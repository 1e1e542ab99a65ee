"""The HTTP status a failed call is answered with: one definition for the server and its records.

The server's error answer, the access log's ``status``, the telemetry row and
the metrics all read ``answer_status``, so each says the status the client got.
Statuses follow whose fault it was: the upstream's own rejection (its status),
the upstream's failure status, or the gateway's verdict (502, 503, 504).
"""

from __future__ import annotations

from laneway.core.errors import (
    CallFailed,
    DeadlineExceeded,
    PushbackRefused,
    ResponseTooLarge,
    Stalled,
    StreamInterrupted,
    UpstreamFailed,
    UpstreamRejected,
)
from laneway.core.failures import PUSHBACK_STATUSES, FailureKind

LANE_NOT_READY_STATUS = 503
"""The answer to a call whose lane (and every fallback lane) cannot run."""
UPSTREAM_AUTH_STATUSES = frozenset({401, 403})
"""Rejections of laneway's own credentials: the gateway answers 502, not the caller's fault."""


def answer_status(exc: CallFailed) -> int:
    """The status for a failed call: the upstream's where it is the caller's business."""
    last = exc.attempts[-1] if exc.attempts else None
    if isinstance(exc, DeadlineExceeded | Stalled):
        return 504
    if isinstance(exc, PushbackRefused):
        return exc.status if exc.status in PUSHBACK_STATUSES else 503
    if isinstance(exc, UpstreamRejected):
        return 502 if exc.status in UPSTREAM_AUTH_STATUSES else exc.status or 400
    if isinstance(exc, ResponseTooLarge):
        return 502  # the upstream answered, too much: the message names max_response_bytes
    if isinstance(exc, UpstreamFailed) and last is not None:
        if last.status is not None and last.outcome == str(last.status):
            return last.status
        if last.outcome == FailureKind.TIMEOUT:
            return 504
    return 502


def sent_status(exc: CallFailed) -> int:
    """The HTTP status the client got for ``exc``: what a call's record says as ``status``.

    A stream interrupted after content flowed was answered 200 (its error is
    an in-band event); every other failure is answered ``answer_status``.
    """
    if isinstance(exc, StreamInterrupted):
        return 200
    return answer_status(exc)
