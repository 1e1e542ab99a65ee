"""The access log: one line per finished call, JSON lines for machines or text for people.

Every call's ``CallRecord`` reaches ``AccessLog.observe_batch`` with the other
calls that ended in the same turn of the event loop, after their answers went
(the engine's record feed, ``laneway.app.feed``): their lines are formatted and
written in one write, so the request path pays nothing here. ``observe`` (the
log used on its own) appends and writes on the loop's next turn the same way.

A line names the key (its configured name, never the key itself), the request
id, lane, source, attempts with their outcomes, status, latency, time to first
token, tokens (``null`` where unknown, never 0), cost and the cache outcome; a
failed call also carries its error code and its reason (the last attempt's
message).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, TextIO

import orjson

from laneway.core.records import CallRecord
from laneway.core.types import Usage

LogFormat = Literal["json", "text"]
CostFn = Callable[[CallRecord], tuple[float | None, str]]
MAX_PENDING = 10_000
"""Lines waiting for the loop's next turn; past it lines are counted as dropped, never queued."""


class AccessLog:
    """A ``CallObserver`` that writes one line per call to ``stream``."""

    def __init__(self, cost: CostFn, stream: TextIO, log_format: LogFormat = "json") -> None:
        self._cost = cost
        self._stream = stream
        self._render = json_line if log_format == "json" else text_line
        self._pending: list[CallRecord] = []
        self._scheduled = False
        self.dropped = 0

    def observe(self, record: CallRecord) -> None:
        """Queue ``record``'s line; it is written on the loop's next turn."""
        if len(self._pending) >= MAX_PENDING:
            self.dropped += 1
            return
        self._pending.append(record)
        if self._scheduled:
            return
        try:
            asyncio.get_running_loop().call_soon(self.flush)
        except RuntimeError:  # no loop (a library caller): write now
            self.flush()
            return
        self._scheduled = True

    def observe_batch(self, records: Sequence[CallRecord]) -> None:
        """Write the lines of ``records`` (and of any queued by ``observe``) in one write."""
        self._pending.extend(records)
        self.flush()

    def follow(self, catch_up: Callable[[], None]) -> None:
        """Nothing to catch up: no figure of the log is read (the feed flushes every turn)."""

    def flush(self) -> None:
        """Write every queued line in one write."""
        pending, self._pending, self._scheduled = self._pending, [], False
        if pending:
            self._stream.write("".join(self._render(r, *self._cost(r)) for r in pending))
            self._stream.flush()


def fields(record: CallRecord, cost: float | None, cost_status: str) -> dict[str, Any]:
    """What one line says about ``record``, in the order a reader scans it."""
    last = record.attempts[-1] if record.attempts else None
    out: dict[str, Any] = {
        "time": iso_millis(record.time),
        "request_id": record.meta.request_id,
        "key": record.meta.caller,
        "lane": record.lane,
        "kind": record.kind,
        "status": record.status,
        "outcome": record.outcome,
        "source": record.source,
        "model": record.model,
        "attempts": [a.as_dict() for a in record.attempts],
        "latency_ms": round(record.latency * 1000, 1),
        "ttfb_ms": None if record.ttfb is None else round(record.ttfb * 1000, 1),
        "tokens": _tokens(record.usage),
        "cost_usd": cost,
        "cost_status": cost_status,
        "cache": record.cache,
        "stream": record.stream,
    }
    if record.outcome != "ok":
        out["error"] = record.error
        out["reason"] = last.message if last is not None and last.message else record.error
    return out


def json_line(record: CallRecord, cost: float | None, cost_status: str) -> str:
    """``record`` as one JSON object and a newline."""
    return orjson.dumps(fields(record, cost, cost_status)).decode() + "\n"


def text_line(record: CallRecord, cost: float | None, cost_status: str) -> str:
    """``record`` as one line for people: the figures first, then who and why."""
    f = fields(record, cost, cost_status)
    outcomes = ",".join(str(a["outcome"]) for a in f["attempts"]) or "-"
    tokens = f["tokens"]
    used = "-" if tokens is None else f"{_n(tokens['prompt'])}/{_n(tokens['completion'])}"
    ttfb = "-" if f["ttfb_ms"] is None else f"{f['ttfb_ms']:.0f}ms"
    parts = [
        f["time"],
        str(f["status"] or "-"),
        f["lane"],
        f"source={f['source'] or '-'}",
        f"{f['latency_ms']:.0f}ms",
        f"attempts={len(f['attempts'])}({outcomes})",
        f"ttfb={ttfb}",
        f"tokens={used}",
        f"cost={'n/a' if cost is None else f'${cost:.6f}'}",
        f"cache={f['cache']}",
        f"key={f['key'] or '-'}",
        f"request_id={f['request_id'] or '-'}",
    ]
    if "error" in f:
        parts += [f"error={f['error']}", f"reason={orjson.dumps(f['reason']).decode()}"]
    return " ".join(parts) + "\n"


def _tokens(usage: Usage) -> dict[str, Any] | None:
    if not usage.known:
        return None
    return {
        "prompt": usage.prompt_tokens,
        "completion": usage.completion_tokens,
        "reasoning": usage.reasoning_tokens,
        "cached": usage.cached_tokens,
        "source": usage.source,
    }


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


def iso_millis(unix: float) -> str:
    """``unix`` as ISO 8601 UTC to the millisecond, as ``datetime.isoformat`` writes it.

    The second's text is made once per second (``_second_text``): formatting a
    datetime was two fifths of building a line. The microseconds are rounded as
    ``datetime.fromtimestamp`` rounds them (half to even), then cut to milliseconds.
    """
    fraction, whole = math.modf(unix)
    micros = round(fraction * 1_000_000)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    elif micros < 0:
        whole, micros = whole - 1, micros + 1_000_000
    return f"{_second_text(int(whole))}.{micros // 1000:03d}+00:00"


@functools.lru_cache(maxsize=4)
def _second_text(second: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` of a whole Unix second (UTC)."""
    return dt.datetime.fromtimestamp(second, dt.UTC).isoformat(timespec="seconds")[:-6]
