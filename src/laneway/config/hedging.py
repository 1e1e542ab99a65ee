"""A lane's ``hedge:`` block: when a second attempt races the first, and how often."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from laneway.core.units import parse_duration


class HedgeConfig(BaseModel):
    """``hedge: {after: 800ms | p95 | p99, max_share: 0.1}`` (see docs/configuration.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: float | Literal["p95", "p99"]
    max_share: float = 0.1

    @field_validator("after", mode="before")
    @classmethod
    def _after(cls, value: object) -> float | str:
        if value in ("p95", "p99"):
            return str(value)
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(f"hedge.after must be a duration, p95 or p99, not {value!r}")
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise ValueError(f"hedge.after: {exc}") from None
        if seconds <= 0:
            raise ValueError("hedge.after must be positive")
        return seconds

    @field_validator("max_share", mode="before")
    @classmethod
    def _share(cls, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"hedge.max_share must be a number from 0 to 1, not {value!r}")
        if not 0 <= value <= 1:
            raise ValueError(f"hedge.max_share must be from 0 to 1, not {value:g}")
        return float(value)

    def problem(self, sources: int, attempt_timeout: float) -> str | None:
        """Why the hedge cannot run on a lane of ``sources`` with this attempt timeout."""
        if sources < 2:
            return "hedge needs a second source: a hedge never goes to the same source"
        if isinstance(self.after, float) and self.after > attempt_timeout:
            return (
                f"hedge.after {self.after:g}s is above the attempt timeout "
                f"{attempt_timeout:g}s: the attempt ends before the hedge could start"
            )
        return None
