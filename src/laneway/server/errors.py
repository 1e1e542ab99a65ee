"""Errors as HTTP answers: OpenAI's error shape plus what laneway knows of the call.

Every error body is ``{"error": {message, type, code, param}, "laneway": {lane,
attempts, deadline_ms, elapsed_ms}}``, so an OpenAI SDK reads it as usual and
an operator sees which attempts were made and why each ended. Statuses follow
whose fault it was: the caller's (4xx), the upstream's own rejection (its
status, its body), or the gateway's verdict on the upstream (502, 503, 504).
An upstream answer over the lane's ``max_response_bytes`` is a 502 with code
``response_too_large`` whose message names the limit.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from laneway.core.answers import LANE_NOT_READY_STATUS, UPSTREAM_AUTH_STATUSES, answer_status
from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    LaneNotReady,
    LanewayError,
    PushbackRefused,
    RequestInvalid,
    RequestTooLarge,
    UnknownLane,
    UpstreamRejected,
)
from laneway.core.failures import PUSHBACK_STATUSES
from laneway.policy.spent import budget_spent
from laneway.server.asgi import Headers, Reply

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}
NO_RETRY = (b"x-should-retry", b"false")
"""Tells the OpenAI and Anthropic SDKs not to retry (``laneway.policy.spent``): sent on every
failed call whose lane spent its budget, and on an internal error (it may have called an
upstream). ``Retry-After`` is never sent beside it: a wait is only worth naming when a retry
after it can succeed, which is when the lane's budget is not spent (a local wait, such as a
source's Retry-After mark or a quota, ended the call before anything was sent)."""


class Refused(Exception):
    """A request the gateway turns away itself (key, permission, size, route)."""

    def __init__(
        self, status: int, code: str, message: str, headers: Headers | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or []


def call_headers(lane: str, source: str | None, attempts: int) -> Headers:
    """The ``X-Laneway-*`` headers every answer carries (empty values when unknown)."""
    return [
        (b"x-laneway-lane", lane.encode()),
        (b"x-laneway-source", (source or "").encode()),
        (b"x-laneway-attempts", str(attempts).encode()),
    ]


def error_reply(exc: Exception, lane: str) -> Reply:
    """The HTTP answer for ``exc``; ``lane`` is the lane the request named, if known."""
    status, body, headers = describe_error(exc, lane)
    return Reply(status, orjson.dumps(body), headers)


def internal_error_reply(lane: str, request_id: str) -> Reply:
    """The 500 for an unexpected exception: OpenAI's shape, and the id to find its log line."""
    message = f"internal error in the gateway; request id {request_id}"
    body = {
        "error": _error(message, 500, "internal_error"),
        "laneway": {"lane": lane or None, "request_id": request_id},
    }
    return Reply(500, orjson.dumps(body), [*call_headers(lane, None, 0), NO_RETRY])


def sse_error(exc: Exception, lane: str) -> bytes:
    """The in-band SSE event that ends a stream whose headers were already sent."""
    if isinstance(exc, LanewayError):
        body = describe_error(exc, lane)[1]
    else:
        body = {"error": _error("internal error in the gateway", 500, "internal_error")}
    return b"data: " + orjson.dumps(body) + b"\n\n"


def describe_error(exc: Exception, lane: str) -> tuple[int, dict[str, Any], Headers]:
    """The status, OpenAI-shaped body and headers of the answer to ``exc``."""
    if isinstance(exc, CallFailed):
        return _call_failed(exc)
    status, code, param = _request_error(exc)
    body = {
        "error": _error(str(exc), status, code, param),
        "laneway": {"lane": lane or None, "attempts": [], "deadline_ms": None, "elapsed_ms": 0},
    }
    extra = exc.headers if isinstance(exc, Refused) else []
    return status, body, [*call_headers(lane, None, 0), *extra]


def _request_error(exc: Exception) -> tuple[int, str, str | None]:
    if isinstance(exc, Refused):
        return exc.status, exc.code, None
    if isinstance(exc, RequestTooLarge):
        return 413, "request_too_large", exc.field
    if isinstance(exc, RequestInvalid):
        return 400, "invalid_request", exc.field
    if isinstance(exc, UnknownLane):
        return 404, "model_not_found", "model"
    if isinstance(exc, LaneNotReady):
        return LANE_NOT_READY_STATUS, "lane_not_ready", None
    return 500, "internal_error", None


def _error(message: str, status: int, code: str, param: str | None = None) -> dict[str, Any]:
    error_type = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"message": message, "type": error_type, "code": code, "param": param}


def _call_failed(exc: CallFailed) -> tuple[int, dict[str, Any], Headers]:
    status = answer_status(exc)
    laneway = {
        "lane": exc.lane,
        "attempts": [attempt.as_dict() for attempt in exc.attempts],
        "deadline_ms": None if exc.deadline is None else round(exc.deadline * 1000),
        "elapsed_ms": round(exc.elapsed * 1000, 1),
    }
    body = _upstream_body(exc, status)
    if body is None:
        message, code = _message_and_code(exc)
        body = {"error": _error(message, status, code)}
    headers = call_headers(exc.lane, exc.source, len(exc.attempts))
    wait = _retry_after(exc)
    if budget_spent(exc):
        headers.append(NO_RETRY)
    elif wait is not None and status in PUSHBACK_STATUSES:
        headers.append((b"retry-after", str(math.ceil(wait)).encode()))
    return status, {**body, "laneway": laneway}, headers


def _upstream_body(exc: CallFailed, status: int) -> dict[str, Any] | None:
    """A rejection's own error body to pass through as is; ``None`` when laneway writes one."""
    if not isinstance(exc, UpstreamRejected) or exc.body is None or status == 502:
        return None
    error = exc.body.get("error")
    if not isinstance(error, dict) or not error:
        return None
    return exc.body


def _message_and_code(exc: CallFailed) -> tuple[str, str]:
    if isinstance(exc, UpstreamRejected) and exc.status in UPSTREAM_AUTH_STATUSES:
        message = (
            f"lane {exc.lane}: source {exc.source} refused laneway's own credentials "
            f"({exc.status}); check that source's api_key"
        )
        return message, "upstream_auth_failed"
    return str(exc), exc.code


def _retry_after(exc: CallFailed) -> float | None:
    """The wait the upstream asked for on the attempt that ended the call.

    The engine raises its verdict while handling that attempt's
    ``AttemptFailure``, so the failure is the verdict's ``__context__``.
    """
    if isinstance(exc, PushbackRefused) and exc.ready_in is not None:
        return exc.ready_in
    failure = exc.__context__
    if isinstance(failure, AttemptFailure):
        return failure.retry_after
    return None
