"""Every error pickles and unpickles whole: class, message and every attribute.

The classes are enumerated from ``laneway.errors.__all__`` (the surface test
pins that it is the whole tree), and each is built from its constructor's
signature, so a new error, or a new attribute, is covered without editing
this file: an unknown required parameter fails with its name.
"""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import pytest

import laneway.errors
from laneway import Laneway
from laneway.config import Secret
from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.failures import FailureKind
from laneway.core.types import Attempt, Usage
from laneway.errors import UpstreamRejected
from tests.helpers import one_lane

ATTEMPTS = (
    Attempt("primary", "503", 0.25, status=503, waited=0.5, message="busy"),
    Attempt("backup", "timeout", 1.5, usage=Usage(3, 4, 7, source="provider")),
)
SAMPLES: dict[str, Any] = {
    "message": "the call failed",
    "field": "messages[0].content",
    "lane": "summarize",
    "known": ["summarize", "embed"],
    "aliases": {"gpt-4o": "summarize"},
    "reasons": ["OPENAI_KEY is unset"],
    "attempts": ATTEMPTS,
    "elapsed": 1.75,
    "deadline": 30.0,
    "ready_in": 12.5,
    "body": {"error": {"message": "bad", "code": "invalid_request_error"}},
    "limit": 1_000_000,
    "output": '{"name": 3}',
    "errors": ("name: not a string",),
    "reason": "the wire format has no place for it",
    "kind": FailureKind.STATUS,
    "status": 503,
    "retry_after": 2.0,
    "calls": 5,
    "unsent": 2920,
}
"""A value for each constructor parameter of the error classes, by parameter name."""

PUBLIC_ERRORS = [getattr(laneway.errors, name) for name in laneway.errors.__all__]
ATTEMPT_FAILURES = [AttemptFailure, Inexpressible]


def build(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` with every parameter its constructors take set from ``SAMPLES``."""
    return cls(**{name: SAMPLES[name] for name in _parameters(cls)})


def _parameters(cls: type[BaseException]) -> list[str]:
    """The named parameters of ``cls.__init__``, and its bases' where it passes ``**kw`` on."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass in (Exception, BaseException):
            continue
        params = inspect.signature(klass).parameters.values()
        for param in params:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in names:
                continue
            assert param.name in SAMPLES, f"add a sample for {cls.__name__}({param.name}=...)"
            names.append(param.name)
        if not any(param.kind is param.VAR_KEYWORD for param in params):
            break
    return names


@pytest.mark.parametrize("cls", PUBLIC_ERRORS + ATTEMPT_FAILURES, ids=lambda c: c.__name__)
def test_an_error_round_trips_with_all_its_attributes(cls: type[BaseException]) -> None:
    error = build(cls)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert type(copy) is cls
        assert copy.args == error.args
        assert str(copy) == str(error)
        assert vars(copy) == vars(error)


def test_a_call_failure_keeps_what_the_caller_reads() -> None:
    error = build(laneway.errors.PushbackRefused)
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, laneway.errors.PushbackRefused)
    assert (copy.lane, copy.attempts, copy.elapsed, copy.deadline, copy.ready_in) == (
        "summarize",
        ATTEMPTS,
        1.75,
        30.0,
        12.5,
    )
    assert (copy.source, copy.status, copy.code) == ("backup", None, "pushback_refused")


def test_the_traceback_and_cause_stay_behind() -> None:
    try:
        try:
            raise OSError("connection reset")
        except OSError as exc:
            raise build(laneway.errors.UpstreamFailed) from exc
    except laneway.errors.UpstreamFailed as raised:
        copy = pickle.loads(pickle.dumps(raised))
    assert copy.__cause__ is None
    assert copy.__traceback__ is None


UPSTREAM_KEY = "sk-pickle-Secr3t-5555"


async def test_a_pickled_upstream_rejection_holds_no_secret(sim) -> None:
    config = one_lane(sim, "echo_key,status=401")
    source = config.lanes["lane"].sources[0]
    config.lanes["lane"].sources[0] = source.model_copy(
        update={"api_key": Secret(env="UPSTREAM_KEY")}
    )
    async with Laneway.from_settings(config, environ={"UPSTREAM_KEY": UPSTREAM_KEY}) as lw:
        with pytest.raises(UpstreamRejected) as caught:
            await lw.chat("lane", [{"role": "user", "content": "x"}])
    pickled = pickle.dumps(caught.value)
    assert UPSTREAM_KEY.encode() not in pickled
    copy = pickle.loads(pickled)
    assert copy.body == caught.value.body
    assert "[redacted]" in copy.body["error"]["message"]
