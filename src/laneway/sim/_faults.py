"""Decide whether a request gets an injected error instead of its normal answer.

Request-shape refusals (content filter, context window, prefill) come first, because
they depend only on the request; then the stateful ones in the order a provider
would apply them: rate limit, outage (flap), scripted failures, random failures,
and finally an unconditional `status`. `down_for` counts from the spec's first
hit, so an outage begins when the scenario that uses the spec begins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from laneway.sim._request import Request, last_role, prompt_chars

if TYPE_CHECKING:
    from laneway.sim._spec import Behaviour
    from laneway.sim._state import SimState

DEFAULT_FAILURE_STATUS = 503
"""Status of fail_first, fail_after, flaky and flap failures when the spec gives no `status`."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """An error answer chosen for a request instead of the normal one."""

    status: int
    message: str
    code: str | None = None
    """Error code for the body; `None` means the usual code for `status`."""
    retry_after: int | None = None
    """Seconds the rate limiter computed, used unless the spec sets its own header."""


def in_flap_outage(elapsed: float, half_period: float) -> bool:
    """Whether `elapsed` seconds after start falls in the down half of a flap period."""
    return elapsed % (2 * half_period) < half_period


MAX_CHOICES = 128
"""The most answers (`n`) the simulator writes, as OpenAI's API: a bigger `n` is a 400."""


def _refuse_request_shape(behaviour: Behaviour, request: Request) -> Refusal | None:
    choices = request.get("n", 1)
    if not isinstance(choices, int) or isinstance(choices, bool) or not 1 <= choices <= MAX_CHOICES:
        return Refusal(400, f"sim: n must be an integer from 1 to {MAX_CHOICES}")
    if behaviour.content_filter:
        return Refusal(400, "sim: the prompt was flagged by the content filter", "content_filter")
    if behaviour.context_length:
        return Refusal(400, "sim: the prompt exceeds the context window", "context_length_exceeded")
    if behaviour.window is not None and prompt_chars(request) > behaviour.window:
        message = f"sim: the prompt exceeds the {behaviour.window}-character context window"
        return Refusal(400, message, "context_length_exceeded")
    if behaviour.reject_prefill and last_role(request) == "assistant":
        return Refusal(400, "sim: a final assistant message (prefill) is not supported")
    return None


def _refuse_rate(behaviour: Behaviour, spec: str, state: SimState, now: float) -> Refusal | None:
    if behaviour.rpm is None:
        return None
    bucket = behaviour.bucket if behaviour.bucket is not None else spec
    wait = state.take_rate_slot(bucket, behaviour.rpm, now)
    if wait is None:
        return None
    message = f"sim: rate limit of {behaviour.rpm} requests per minute reached for {bucket!r}"
    return Refusal(429, message, retry_after=None if behaviour.no_retry_after else wait)


def _refuse_scripted(
    behaviour: Behaviour, spec: str, state: SimState, now: float
) -> Refusal | None:
    status = behaviour.status if behaviour.status is not None else DEFAULT_FAILURE_STATUS
    flap = behaviour.flap
    if flap is not None and in_flap_outage(now - state.started_at, flap):
        return Refusal(status, f"sim: flapping upstream is down (flap={flap})")
    down_for = behaviour.down_for
    if down_for is not None and state.since_first_hit(spec, now) < down_for:
        return Refusal(status, f"sim: upstream is down for {down_for:g} s from its first request")
    counted = _counted_refusal(behaviour, spec, state, status)
    if counted is not None:
        return counted
    flaky = behaviour.flaky
    if flaky is not None and state.rng(spec, behaviour.seed).random() < flaky:
        return Refusal(status, f"sim: flaky upstream failed (flaky={flaky})")
    if behaviour.status is not None and not behaviour.fails_conditionally:
        return Refusal(behaviour.status, f"sim: injected status {behaviour.status}")
    return None


def _counted_refusal(
    behaviour: Behaviour, spec: str, state: SimState, status: int
) -> Refusal | None:
    """`fail_first` and `fail_after`: by the request's ordinal, counted once for both."""
    fail_first, fail_after = behaviour.fail_first, behaviour.fail_after
    if fail_first is None and fail_after is None:
        return None
    attempt = state.next_attempt(spec)
    if fail_first is not None and attempt <= fail_first:
        return Refusal(status, f"sim: failing the first {fail_first} requests")
    if fail_after is not None and attempt > fail_after:
        return Refusal(status, f"sim: down after its first {fail_after} requests")
    return None


def choose_refusal(
    behaviour: Behaviour, spec: str, request: Request, state: SimState, now: float
) -> Refusal | None:
    """Return the error this request should get, or `None` for a normal answer.

    A spec without `bucket` rate-limits in a bucket of its own, named by the spec.
    """
    return (
        _refuse_request_shape(behaviour, request)
        or _refuse_rate(behaviour, spec, state, now)
        or _refuse_scripted(behaviour, spec, state, now)
    )
