"""Admin requests in the access log: one line per ``/admin`` request, in the log's format.

Beside the calls' lines (``laneway.server.access_log``), on the same stream:
when, the request id, which admin key (its configured name; none when it
failed to authenticate), the method and path, the status, what changed
(``key.create``, ``team.update``...) and on which record, and how long it
took. Never a secret: the admin key is named, a new key's secret is in the
answer only. The action is noted where the handler makes it (``note``) and
read back when the answer is ready; a context variable carries it, since
each request runs in its own task.
"""

from __future__ import annotations

import datetime as dt
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from laneway.server.access_log import LogFormat

_NOTED: ContextVar[tuple[str, str] | None] = ContextVar("admin_action", default=None)


def note(action: str, target: str) -> None:
    """Say what the admin request being answered changed, for its access-log line."""
    _NOTED.set((action, target))


def forget() -> None:
    """Start a request with nothing noted."""
    _NOTED.set(None)


@dataclass(frozen=True, slots=True)
class AdminAccessLog:
    """Writes admin requests' lines to ``stream`` (the access log's), JSON or text."""

    stream: TextIO
    log_format: LogFormat = "json"

    def write(
        self,
        *,
        at: float,
        request_id: str,
        admin: str | None,
        method: str,
        path: str,
        status: int,
        latency: float,
    ) -> None:
        """One request's line, with the action ``note`` recorded while answering it."""
        action, target = _NOTED.get() or (None, None)
        fields: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="milliseconds"),
            "request_id": request_id or None,
            "event": "admin",
            "admin": admin,
            "method": method,
            "path": path,
            "status": status,
            "action": action,
            "target": target,
            "latency_ms": round(latency * 1000, 1),
        }
        if self.log_format == "json":
            line = orjson.dumps(fields).decode()
        else:
            parts = [fields["time"], str(status), "admin", method, path]
            parts += [f"admin={admin or '-'}", f"action={action or '-'}"]
            parts += [f"target={target or '-'}", f"{fields['latency_ms']:.0f}ms"]
            line = " ".join([*parts, f"request_id={request_id or '-'}"])
        self.stream.write(line + "\n")
        self.stream.flush()
