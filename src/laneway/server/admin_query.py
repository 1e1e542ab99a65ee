"""The admin API's plumbing: its query strings, its error answers, and spend from telemetry."""

from __future__ import annotations

from urllib.parse import parse_qsl

import orjson

from laneway.server.admin_input import AdminInvalid, seconds
from laneway.server.asgi import Reply
from laneway.telemetry.port import SpendRow, TelemetryStore


class TelemetrySpend:
    """Spend read from a telemetry store of the admin API's own, opened at the first read
    (the telemetry writer's store belongs to its thread)."""

    def __init__(self, store: TelemetryStore) -> None:
        self.store = store
        self._opened = False

    async def __call__(self, since: float, by: str) -> list[SpendRow]:
        if not self._opened:
            await self.store.open()
            self._opened = True
        return await self.store.query_spend(since, by)

    async def aclose(self) -> None:
        if self._opened:
            await self.store.close()


def query(raw: bytes) -> dict[str, str]:
    return dict(parse_qsl(raw.decode("latin-1")))


def limit(raw: bytes) -> int:
    text = query(raw).get("limit", "100")
    if not text.isdigit() or not 0 < int(text) <= 10_000:
        raise AdminInvalid("limit", "a whole number from 1 to 10000")
    return int(text)


def since(text: str, now: float) -> float:
    """``since``: seconds since the epoch, an ISO 8601 time, or a duration back (``24h``)."""
    import datetime as dt

    try:
        return float(text)
    except ValueError:
        pass
    try:
        at = dt.datetime.fromisoformat(text)
        return (at if at.tzinfo else at.replace(tzinfo=dt.UTC)).timestamp()
    except ValueError:
        return now - seconds("since", text)


def error(status: int, field: str, message: str) -> Reply:
    kinds = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
    error = {
        "type": kinds.get(status, "invalid_request_error"),
        "code": {401: "invalid_admin_key", 429: "too_many_failures"}.get(status, "invalid_field"),
        "param": field or None,
        "message": message,
    }
    headers = [(b"retry-after", b"60")] if status == 429 else []
    return Reply(status, orjson.dumps({"error": error}), headers)
