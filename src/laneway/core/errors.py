"""Typed errors. Each carries what happened: lane, source, attempts, elapsed.

The tree::

    LanewayError
    ├─ ConfigError              the configuration is wrong (named key and place)
    ├─ RequestInvalid           the caller's input is wrong (named field)
    │  └─ RequestTooLarge       the input is over a size bound (named field and setting)
    ├─ UnknownLane              no lane of that name (lists the lanes there are)
    ├─ LaneNotReady             the lane cannot run (e.g. its key variable is unset)
    ├─ JobMismatch              a batch job directory belongs to another job
    ├─ BatchStopped             a batch job stopped on a run of failures no retry can fix
    ├─ TelemetryError           the telemetry database cannot be laneway's (layout, URL)
    ├─ CacheUnavailable         a cache backend failed (the engine reads it as a miss)
    └─ CallFailed               a call ended without a result; ``attempts`` says why
       ├─ DeadlineExceeded      the lane's (or caller's) deadline passed
       ├─ PushbackRefused       a source asked to wait longer than the policy or the deadline allows
       ├─ Stalled               the lane made no progress anywhere for ``stall_after``
       ├─ UpstreamFailed        the last attempt failed and the policy gives up
       │  ├─ UpstreamTimeout    ... and that attempt timed out (before the call's deadline)
       │  ├─ UpstreamRejected   the upstream refused the request itself (4xx): never retried
       │  └─ ContextLengthExceeded
       ├─ StreamInterrupted     a stream broke after content reached the caller
       ├─ DimensionMismatch     an embedding's length differs from the lane's pin
       ├─ ResponseTooLarge      an upstream answer passed the lane's ``max_response_bytes``
       └─ ResultInvalid         a structured result failed validation after all re-asks

``AttemptFailure`` is not a ``LanewayError``: it is one attempt's failure inside
the call loop, classified for the retry policy, and never reaches the caller
except as an entry of ``attempts``. Its subclass ``Inexpressible`` is raised
before anything is sent, when a source's wire format cannot carry the request.

Every error pickles with all its attributes (a batch worker in another
process, a task queue, a result cache can carry one): the pickle holds the
message and the attributes, never the traceback or the chained cause, and
the attributes hold no secret, since upstream text is redacted where it
enters (``laneway.engine.redaction``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from laneway.core.failures import STATUS_LABELLED, FailureKind
from laneway.core.types import Attempt


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An error of ``cls`` with ``args``, its ``__init__`` skipped (pickle restores the rest)."""
    return cls.__new__(cls, *args)


def _pickled(error: BaseException) -> tuple[Any, ...]:
    """Pickle as class, ``args`` and attributes, without calling ``__init__`` again.

    Exception's own ``__reduce__`` calls ``cls(*args)``, which fails for the
    errors whose ``__init__`` takes keyword-only attributes (``lane``,
    ``attempts``...) or builds the message from its arguments.
    """
    return _rebuilt, (type(error), error.args), error.__dict__


class LanewayError(Exception):
    """Base of every error laneway raises on purpose."""

    __reduce__ = _pickled


class ConfigError(LanewayError):
    """The configuration is invalid; the message names the key and where it stands."""


class RequestInvalid(LanewayError):
    """The caller's request is invalid; ``field`` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class RequestTooLarge(RequestInvalid):
    """The caller's input is over a configured bound (an HTTP 413); ``field`` names it."""


class UnknownLane(LanewayError):
    """The lane named by the caller does not exist (or the caller may not use it)."""

    def __init__(
        self, lane: str, known: list[str], aliases: Mapping[str, str] | None = None
    ) -> None:
        aliased = ", ".join(f"{a} -> {t}" for a, t in (aliases or {}).items())
        message = f"unknown lane {lane!r}; lanes: {', '.join(known) or '(none)'}"
        super().__init__(message + (f"; aliases: {aliased}" if aliased else ""))
        self.lane = lane
        self.known = known
        self.aliases = dict(aliases or {})


class LaneNotReady(LanewayError):
    """The lane is configured but cannot run, e.g. a key variable is unset."""

    code = "lane_not_ready"

    def __init__(self, lane: str, reasons: list[str]) -> None:
        super().__init__(f"lane {lane!r} is not ready: {'; '.join(reasons)}")
        self.lane = lane
        self.reasons = reasons


class JobMismatch(LanewayError):
    """The batch job directory belongs to another job: resuming would mix results."""


class BatchStopped(LanewayError):
    """A batch job stopped sending: ``calls`` calls in a row failed alike, unfixably.

    ``unsent`` items have no outcome yet (the failed calls' items among them):
    a rerun of the same job sends them, and nothing already answered.
    """

    code = "batch_stopped"

    def __init__(self, message: str, *, calls: int, unsent: int) -> None:
        super().__init__(message)
        self.calls = calls
        self.unsent = unsent


class TelemetryError(LanewayError):
    """The telemetry database cannot be used as laneway's (layout, version, URL)."""


class CacheUnavailable(LanewayError):
    """The cache backend failed (unreachable, locked, corrupt).

    The engine treats this as a miss: a cache may make calls cheaper, never
    make them fail.
    """


class CallFailed(LanewayError):
    """A call ended without a result. ``attempts`` lists what each attempt met.

    ``deadline`` is the budget the call had, in seconds: the lane's deadline,
    tightened by the caller's own when that was shorter.
    """

    code = "upstream_error"

    def __init__(
        self,
        message: str,
        *,
        lane: str,
        attempts: tuple[Attempt, ...],
        elapsed: float,
        deadline: float | None = None,
    ) -> None:
        super().__init__(message)
        self.lane = lane
        self.attempts = attempts
        self.elapsed = elapsed
        self.deadline = deadline

    @property
    def source(self) -> str | None:
        """The source of the last attempt, if any was made."""
        return self.attempts[-1].source if self.attempts else None

    @property
    def status(self) -> int | None:
        """The upstream status of the last attempt, if it got one."""
        return self.attempts[-1].status if self.attempts else None


class DeadlineExceeded(CallFailed):
    """The call's deadline passed; the in-flight attempt was cancelled."""

    code = "deadline_exceeded"


class PushbackRefused(CallFailed):
    """A source's Retry-After could not be honoured within the policy or the deadline.

    The message names the source and when it will be ready; ``ready_in`` is
    that wait in seconds, counted from the error.
    """

    code = "pushback_refused"

    def __init__(self, message: str, *, ready_in: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.ready_in = ready_in


class Stalled(CallFailed):
    """The lane made no progress anywhere for longer than ``stall_after``."""

    code = "stalled"


class UpstreamFailed(CallFailed):
    """The upstream failed and the lane's policy does not try again."""


class UpstreamTimeout(UpstreamFailed):
    """The last attempt timed out (``attempt_timeout``, ``first_byte_timeout``) and none is left."""

    code = "upstream_timeout"


class UpstreamRejected(UpstreamFailed):
    """The upstream rejected the request itself (4xx); it is never retried."""

    code = "upstream_rejected"

    def __init__(self, message: str, *, body: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.body = body


class ContextLengthExceeded(UpstreamRejected):
    """The request is longer than every tried source's context window."""

    code = "context_length_exceeded"


class StreamInterrupted(CallFailed):
    """A stream broke after content had been forwarded to the caller."""

    code = "stream_interrupted"


class DimensionMismatch(CallFailed):
    """An embedding's length differs from the lane's pinned ``dimensions``."""

    code = "dimension_mismatch"


class ResponseTooLarge(CallFailed):
    """An upstream answer was larger than the lane's ``max_response_bytes`` (``limit``).

    Reading stops at the limit, so an oversized batch costs bounded memory and
    fails by name instead of as an opaque 5xx; a smaller ``max_batch_items``
    is the usual cure.
    """

    code = "response_too_large"

    def __init__(self, message: str, *, limit: int, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.limit = limit


class ResultInvalid(CallFailed):
    """A structured result stayed invalid after every re-ask.

    ``output`` is the last raw answer and ``errors`` what was wrong with it,
    so the caller can log or repair it; the source that answered is not
    blamed (the upstream call itself succeeded).
    """

    code = "result_invalid"

    def __init__(self, message: str, *, output: str, errors: tuple[str, ...], **kw: Any) -> None:
        super().__init__(message, **kw)
        self.output = output
        self.errors = errors


@dataclass(eq=False)
class AttemptFailure(Exception):
    """One attempt's failure, classified for the retry policy.

    ``kind`` says what happened (``laneway.core.failures.FailureKind``, where
    each kind is documented); ``status`` is the upstream's HTTP status when it
    answered one.
    """

    kind: FailureKind
    message: str
    status: int | None = None
    retry_after: float | None = None
    body: dict[str, Any] | None = None

    __reduce__ = _pickled

    def __str__(self) -> str:
        return self.message

    @property
    def label(self) -> str:
        """The name ``retry_on`` matches: the status code, else the kind."""
        if self.kind in STATUS_LABELLED and self.status is not None:
            return str(self.status)
        return self.kind.value


class Inexpressible(AttemptFailure):
    """A source's wire format cannot carry part of the request; nothing was sent.

    An adapter raises it while building the request. The call loop skips the
    source for this call (no retry spent, no health mark) and lists the skip in
    ``attempts``; the engine refuses the request up front, as ``RequestInvalid``
    naming ``field``, only when no ready source of the lane can carry it.
    """

    def __init__(self, field: str, reason: str) -> None:
        error = {"message": f"{field}: {reason}", "param": field, "code": "unsupported_parameter"}
        super().__init__(FailureKind.UNSUPPORTED, f"{field}: {reason}", body={"error": error})
        self.field = field
        self.reason = reason
