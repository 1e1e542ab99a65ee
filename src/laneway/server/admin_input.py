"""The admin API's request bodies: read, checked, and turned into store records.

A body that does not fit is a ``AdminInvalid`` naming the field
(``budget.period``, ``lanes[1]``...): the API answers it 422 with that field
as ``param``. A key of a team keeps within the team: its lanes among the
team's, each of its limits at most the team's (a limit it leaves out is the
team's).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from laneway.core.redact import STORED_KEY_PATTERN
from laneway.core.units import parse_duration
from laneway.state.keys.records import Limits, TeamRecord

Positive = Annotated[int, Field(gt=0)]
_T = TypeVar("_T", bound=BaseModel)


class AdminInvalid(Exception):
    """A request field the admin API cannot take; ``field`` names it."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.status = status


def _no_secret(name: str) -> str:
    if re.search(STORED_KEY_PATTERN, name):
        raise ValueError("a name must not hold a key's secret")
    return name


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BudgetBody(_Body):
    amount: float = Field(gt=0)
    period: Literal["day", "week", "month", "total"]
    """The period the key ledger counts spend in: a UTC day, an ISO week (from Monday
    00:00 UTC), a UTC month, or ``total`` (never reset)."""


class LimitsBody(_Body):
    lanes: list[str] | None = Field(default=None, min_length=1)
    rpm: Positive | None = None
    tpm: Positive | None = None
    max_concurrency: Positive | None = None
    budget: BudgetBody | None = None
    metadata: dict[str, Any] | None = None


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_secret)]


class KeyBody(LimitsBody):
    name: Name | None = None
    team: str | None = Field(default=None, min_length=1)
    expires_at: dt.datetime | float | None = None
    expires_in: str | float | None = None
    blocked: bool | None = None


class TeamBody(LimitsBody):
    name: Name | None = None
    blocked: bool | None = None


class RotateBody(_Body):
    grace: str | float = 0.0
    """How long the old secret keeps working (``1h``, seconds)."""


def read(model: type[_T], data: Mapping[str, Any]) -> _T:
    """``data`` as ``model``, or ``AdminInvalid`` naming the first field that does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = _where(error["loc"])
        raise AdminInvalid(field, error["msg"]) from None


def _where(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def seconds(field: str, value: str | float) -> float:
    """A duration field in seconds."""
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise AdminInvalid(field, str(exc)) from None


def expiry(body: KeyBody, now: float) -> float | Literal[False] | None:
    """The wall time ``body`` sets the key to expire at; ``False``: it says nothing."""
    if body.expires_at is not None and body.expires_in is not None:
        raise AdminInvalid("expires_in", "give expires_at or expires_in, not both")
    if body.expires_in is not None:
        return now + seconds("expires_in", body.expires_in)
    if isinstance(body.expires_at, dt.datetime):
        at = body.expires_at
        return (at if at.tzinfo else at.replace(tzinfo=dt.UTC)).timestamp()
    if body.expires_at is not None:
        return float(body.expires_at)
    return False


def merged_limits(body: LimitsBody, base: Limits, lanes: Sequence[str]) -> Limits:
    """``base`` with what ``body`` sets; its lanes must be the gateway's (or ``*``)."""
    fields = body.model_fields_set
    wanted = tuple(body.lanes) if body.lanes is not None else base.lanes
    for index, lane in enumerate(wanted):
        if lane != "*" and lane not in lanes:
            raise AdminInvalid(f"lanes[{index}]", f"no lane {lane!r}; lanes: {', '.join(lanes)}")
    budget, period = base.budget, base.period
    if "budget" in fields:
        budget = None if body.budget is None else body.budget.amount
        period = None if body.budget is None else body.budget.period
    return Limits(
        lanes=wanted,
        rpm=body.rpm if "rpm" in fields else base.rpm,
        tpm=body.tpm if "tpm" in fields else base.tpm,
        max_concurrency=body.max_concurrency
        if "max_concurrency" in fields
        else base.max_concurrency,
        budget=budget,
        period=period,
    )


def within_team(own: Limits, team: TeamRecord | None) -> Limits:
    """``own`` kept within ``team``'s: lanes among its lanes, limits at most its limits."""
    if team is None:
        return own
    bound = team.limits
    lanes = own.lanes
    if "*" not in bound.lanes:
        if "*" in lanes:
            lanes = bound.lanes
        for index, lane in enumerate(lanes):
            if lane not in bound.lanes:
                raise AdminInvalid(f"lanes[{index}]", f"team {team.name!r} may not use {lane!r}")
    values: dict[str, int | None] = {}
    for name in ("rpm", "tpm", "max_concurrency"):
        mine, cap = getattr(own, name), getattr(bound, name)
        if mine is not None and cap is not None and mine > cap:
            raise AdminInvalid(name, f"{mine} is over team {team.name!r}'s {cap}")
        values[name] = mine if mine is not None else cap
    budget, period = own.budget, own.period
    same_period = bound.budget is not None and budget is not None and period == bound.period
    if same_period and budget is not None and bound.budget is not None and budget > bound.budget:
        raise AdminInvalid("budget.amount", f"{budget} is over team {team.name!r}'s")
    return Limits(lanes, values["rpm"], values["tpm"], values["max_concurrency"], budget, period)
