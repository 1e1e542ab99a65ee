"""The records agree with what the caller got: the telemetry row, the access log, the metrics.

A call's telemetry row is ``laneway.telemetry.rows.to_row`` of its record,
priced by the product's pricer (what the writer stores); its access-log line
is the server's JSON line; the metrics are the ``Metrics`` every call feeds.
Each must say what the caller was told: the status, the attempts, the usage
and the cost.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from laneway.accounting.pricer import Pricer
from laneway.core.records import CallRecord
from laneway.core.types import NO_USAGE
from laneway.metrics import Metrics
from laneway.telemetry.rows import to_row
from laneway.telemetry.schema import COLUMN_NAMES
from tests.oracle.runner import Call, Run

COST_GRAIN = 1e-12


def row(record: CallRecord, pricer: Pricer) -> dict[str, Any]:
    """The telemetry row the writer stores for ``record``, by column name."""
    return dict(zip(COLUMN_NAMES, to_row(record, *pricer.cost(record)), strict=True))


def same_cost(usd: float | None, cost: Decimal | None) -> bool:
    if usd is None or cost is None:
        return usd is None and cost is None
    return abs(usd - float(cost)) <= COST_GRAIN


def library_call(call: Call, pricer: Pricer) -> None:
    """The reply (or the error) and the rows of the call's lanes say the same."""
    rows = [row(record, pricer) for record in call.records]
    assert rows, "every call leaves a row"
    last = rows[-1]
    assert sum(r["attempts"] for r in rows) == len(call.attempts), (rows, call.attempts)
    if call.error is None:
        assert last["outcome"] == "ok" and last["status"] == 200, last
        usage = call.usage or NO_USAGE
        assert last["prompt_tokens"] == usage.prompt_tokens, (last, usage)
        assert last["completion_tokens"] == usage.completion_tokens, (last, usage)
        assert same_cost(last["cost_usd"], call.cost), (last, call.cost)
        return
    assert last["outcome"] == "error" and last["error"] == call.error.code, (last, call.error)


def gateway_call(call: Call, pricer: Pricer) -> None:
    """The HTTP answer, its access-log line and its rows say the same."""
    rows = [row(record, pricer) for record in call.records]
    assert rows and len(call.lines) == len(rows), (rows, call.lines)
    last, line = rows[-1], call.lines[-1]
    attempts = int(call.headers["x-laneway-attempts"])
    assert sum(r["attempts"] for r in rows) == attempts, (rows, call.headers)
    assert line["status"] == last["status"] == call.status, (line, last, call.status)
    assert len(line["attempts"]) == last["attempts"], (line, last)
    assert line["cost_usd"] == last["cost_usd"], (line, last)
    tokens = line["tokens"]
    assert (tokens or {}).get("prompt") == last["prompt_tokens"], (line, last)
    if "error" in call.body:
        assert len(call.body["laneway"]["attempts"]) == attempts, (call.body, attempts)
        assert last["outcome"] == "error", last
        return
    assert last["outcome"] == "ok", last
    usage = call.body.get("usage") or {}
    assert usage.get("prompt_tokens") == last["prompt_tokens"], (usage, last)
    assert usage.get("completion_tokens") == last["completion_tokens"], (usage, last)


def metrics(run: Run, pricer: Pricer) -> None:
    """The metrics count the run's calls, attempts, tokens, cost and answers, no more."""
    records = [record for call in run.calls for record in call.records]
    counts = _by_name(run.metrics)
    assert counts.get("laneway_requests", 0) == len(records), counts
    assert counts.get("laneway_attempts", 0) == sum(len(r.attempts) for r in records), counts
    prompts = sum(r.usage.prompt_tokens or 0 for r in records if r.usage.known)
    assert counts.get("laneway_tokens/prompt", 0) == prompts, counts
    spent = sum(usd for r in records if (usd := pricer.cost(r)[0]) is not None)
    assert abs(counts.get("laneway_cost_usd", 0) - spent) <= COST_GRAIN, (counts, spent)


def responses(run: Run) -> None:
    """``laneway_responses`` counts each HTTP answer by the status sent."""
    sent = Counter(str(call.status) for call in run.calls)
    counted = {
        labels[0]: int(value)
        for (name, labels), value in run.metrics.counts.items()
        if name == "laneway_responses"
    }
    assert counted == dict(sent), (counted, sent)


def _by_name(metrics: Metrics) -> dict[str, float]:
    totals: dict[str, float] = {}
    for (name, labels), value in metrics.counts.items():
        totals[name] = totals.get(name, 0.0) + value
        if name == "laneway_tokens":
            kind = f"{name}/{labels[2]}"
            totals[kind] = totals.get(kind, 0.0) + value
    return totals
