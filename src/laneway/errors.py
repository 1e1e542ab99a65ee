"""The errors laneway raises: the whole ``LanewayError`` tree (drawn in ``laneway.core.errors``).

``except laneway.errors.CallFailed`` catches every call that ended without a
result; each error carries what happened (lane, source, attempts, elapsed,
deadline) and pickles with all of it.
"""

from laneway.core.errors import (
    BatchStopped,
    CacheUnavailable,
    CallFailed,
    ConfigError,
    ContextLengthExceeded,
    DeadlineExceeded,
    DimensionMismatch,
    JobMismatch,
    LaneNotReady,
    LanewayError,
    PushbackRefused,
    RequestInvalid,
    RequestTooLarge,
    ResponseTooLarge,
    ResultInvalid,
    Stalled,
    StreamInterrupted,
    TelemetryError,
    UnknownLane,
    UpstreamFailed,
    UpstreamRejected,
    UpstreamTimeout,
)

__all__ = [
    "BatchStopped",
    "CacheUnavailable",
    "CallFailed",
    "ConfigError",
    "ContextLengthExceeded",
    "DeadlineExceeded",
    "DimensionMismatch",
    "JobMismatch",
    "LaneNotReady",
    "LanewayError",
    "PushbackRefused",
    "RequestInvalid",
    "RequestTooLarge",
    "ResponseTooLarge",
    "ResultInvalid",
    "Stalled",
    "StreamInterrupted",
    "TelemetryError",
    "UnknownLane",
    "UpstreamFailed",
    "UpstreamRejected",
    "UpstreamTimeout",
]
