"""The errors laneway raises (see ``laneway.core.errors`` for the tree)."""

from laneway.core.errors import (
    CallFailed,
    ConfigError,
    ContextLengthExceeded,
    DeadlineExceeded,
    DimensionMismatch,
    LaneNotReady,
    LanewayError,
    PushbackRefused,
    RequestInvalid,
    ResponseTooLarge,
    ResultInvalid,
    Stalled,
    StreamInterrupted,
    UnknownLane,
    UpstreamFailed,
    UpstreamRejected,
)

__all__ = [
    "CallFailed",
    "ConfigError",
    "ContextLengthExceeded",
    "DeadlineExceeded",
    "DimensionMismatch",
    "LaneNotReady",
    "LanewayError",
    "PushbackRefused",
    "RequestInvalid",
    "ResponseTooLarge",
    "ResultInvalid",
    "Stalled",
    "StreamInterrupted",
    "UnknownLane",
    "UpstreamFailed",
    "UpstreamRejected",
]
