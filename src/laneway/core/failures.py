"""The kinds of attempt failure: the one list every layer classifies against.

An ``AttemptFailure`` carries one ``FailureKind``. The retry policy, the
outcome judge (health, breaker, pacing), the verdict a call ends with and the
config's ``retry_on`` all read these members, so a misspelt kind is a type
error rather than a silently unmatched string. Values are the strings
telemetry, the access log and error bodies have always written.

Nothing is retried unless the lane lists it in ``retry_on``: a kind in
``RETRY_CLASSES`` is named there as itself; a ``status`` failure by its
status code. The HTTP status each member names is what the server answers
when a call ends on that kind (a deadline or a refused pushback ends it
with 504 or 503 whatever the last kind).
"""

from __future__ import annotations

import enum


class FailureKind(enum.StrEnum):
    """What one attempt met. ``retry_on`` names the first four; the rest never retry."""

    TIMEOUT = "timeout"
    """No answer within ``attempt_timeout``, ``first_byte_timeout`` or ``idle_timeout``.
    Retried when ``retry_on`` lists ``timeout``; the server answers 504 ``upstream_timeout``."""

    CONNECT = "connect"
    """The upstream could not be reached: refused, reset or unresolvable before an answer.
    Retried when ``retry_on`` lists ``connect``; the server answers 502."""

    EMPTY = "empty"
    """An answer with no content, no reasoning and no tool call. Only detected (and then
    never returned as a success) when ``retry_on`` lists ``empty``; the server answers 502."""

    CUT = "cut"
    """A body or stream broken off, or an in-band error event, before the answer was whole.
    Retried when ``retry_on`` lists ``cut``; the server answers 502 (an in-band SSE error
    once content was streamed)."""

    STATUS = "status"
    """An HTTP error answer that is not a rejection (429, 5xx...). Retried when ``retry_on``
    lists its status code; a 429/503 with ``Retry-After`` may be a pushback instead. The
    server answers with the upstream's status."""

    REJECTED = "rejected"
    """The upstream refused the request itself (400, 401, 403, 404, 413, 422): the same
    request would fail again, so it is never retried and does not count against the source's
    health. The server answers with the upstream's status and body (502 for 401/403, which
    are laneway's own credentials)."""

    CONTEXT_LENGTH = "context_length"
    """A rejection because the request is over the source's context window. Never retried on
    that source: the call moves to one with a larger ``context_window``. The server answers
    with the upstream's status and body (``context_length_exceeded``)."""

    MALFORMED = "malformed"
    """An answer that cannot be parsed (not JSON, no choices, wrong vector count). Never
    retried; it counts as a failure of the source. The server answers 502."""

    TOO_LARGE = "too_large"
    """An answer over the lane's ``max_response_bytes``; reading stopped at the limit. Never
    retried; the server answers 502 ``response_too_large``."""

    DIMENSION = "dimension"
    """An embedding whose length differs from the lane's pinned ``dimensions``. Never
    retried and neutral to the source's health; the server answers 502
    ``dimension_mismatch``."""

    UNSUPPORTED = "unsupported"
    """The source's wire format cannot carry the request (``Inexpressible``); nothing was
    sent. The source is skipped for the call at no retry's cost; when no ready source can
    carry it, the server answers 400 ``invalid_request`` naming the field."""

    DIVERGED = "diverged"
    """A restarted stream whose answer does not begin with the text already sent. Never
    retried and neutral to health; the stream ends with an in-band ``stream_interrupted``
    error (its status, 200, was already sent)."""

    DEADLINE = "deadline"
    """The call's deadline passed mid-answer. Never retried (no time is left); the server
    answers 504 ``deadline_exceeded`` (in-band for a stream)."""

    @property
    def retry_class(self) -> bool:
        """Whether ``retry_on`` may name this kind itself (``status`` is named by its code)."""
        return self in RETRY_CLASSES


RETRY_CLASSES = frozenset(
    {FailureKind.TIMEOUT, FailureKind.CONNECT, FailureKind.EMPTY, FailureKind.CUT}
)
"""The kinds ``retry_on`` names as themselves."""

REJECTIONS = frozenset({FailureKind.REJECTED, FailureKind.CONTEXT_LENGTH})
"""The upstream refused the request: retrying it unchanged cannot succeed."""

NEUTRAL = frozenset({*REJECTIONS, FailureKind.DIMENSION, FailureKind.DIVERGED})
"""Kinds that do not count for or against a source (health, breaker, pacing)."""

STATUS_LABELLED = frozenset({FailureKind.STATUS, *REJECTIONS})
"""Kinds whose ``retry_on`` label is the answer's status code rather than the kind."""

REQUEST_REJECTION_STATUSES = frozenset({400, 413, 422})
"""Upstream statuses that refuse the request itself (malformed, too large, unprocessable):
another source or lane would refuse it too, so no fallback lane is tried for them."""

REJECTION_STATUSES = REQUEST_REJECTION_STATUSES | {401, 403, 404}
"""Upstream statuses that are rejections (``FailureKind.REJECTED``): never retried, never
listed in ``retry_on``, neutral to the source's health. 401/403/404 refuse the source's
credentials or model, not the request: a fallback lane may still answer."""

PUSHBACK_STATUSES = frozenset({429, 503})
"""Upstream statuses whose ``Retry-After`` is a pushback (``max_pushbacks``), and the ones
the server passes on with a ``Retry-After`` of its own."""

SET_ASIDE = frozenset({FailureKind.TIMEOUT, FailureKind.CONNECT})
"""Kinds after which a call tries its other sources before going back to the failed one."""


def parse_retry_class(label: str) -> FailureKind:
    """The kind a ``retry_on`` entry names; ``ValueError`` naming it and the choices if none.

    The config reads ``retry_on`` through this, so a misspelt class is refused
    where the config is loaded, with the classes there are.
    """
    try:
        kind = FailureKind(label)
    except ValueError:
        kind = None
    if kind is None or not kind.retry_class:
        choices = ", ".join(k for k in FailureKind if k.retry_class)
        what = "a failure kind retry_on cannot name" if kind else "not a failure kind"
        raise ValueError(f"{label!r} is {what}; use an HTTP status or one of {choices}") from None
    return kind
