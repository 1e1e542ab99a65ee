"""What the status page shows, as JSON-ready data: ``GET /status.json`` is exactly this.

Each lane and each of its sources gets a verdict (``down``, ``warn`` or
``ok``) with the reasons behind it, its live state (``engine.standing``),
its figures over the last minute (``now``) and the last hour (``hour``), and
per-minute points for the plots (``History``). Lanes that need someone come
first; within a lane, sources keep their priority order.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from laneway.engine.standing import LaneStanding, SourceStanding
from laneway.metrics.history import (
    BUCKET_SECONDS,
    LANE,
    SLOTS_PER_MINUTE,
    Bucket,
    History,
    binned_quantile,
)

NOW_BUCKETS = SLOTS_PER_MINUTE
"""The "now" columns cover the last minute: six 10-second buckets."""
POINTS = 60
"""Plot points: one per minute over the hour (the last one the minute under way)."""
QUOTA_WARN = 0.9
"""A quota window this full is worth a look."""
ERRORS_WARN = 0.1
"""A source failing this share of its attempts in the last minute is worth a look."""
ERRORS_DOWN = 0.5
"""A lane failing this share of its calls in the last minute is down."""
ORDER = {"down": 0, "warn": 1, "ok": 2}


def status_data(
    standings: Sequence[LaneStanding], history: History, wall_now: float, worker: dict[str, Any]
) -> dict[str, Any]:
    """The whole page's data: when, which worker answered, and every lane, worst first."""
    last = int(wall_now // BUCKET_SECONDS)
    lanes = [_lane(standing, history, last) for standing in standings]
    lanes.sort(key=lambda lane: ORDER[lane["verdict"]])
    counts = {verdict: sum(lane["verdict"] == verdict for lane in lanes) for verdict in ORDER}
    generated = datetime.datetime.fromtimestamp(wall_now, datetime.UTC)
    return {
        "generated_at": generated.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "worker": worker,
        "now_seconds": NOW_BUCKETS * BUCKET_SECONDS,
        "point_seconds": 60,
        "lanes_by_verdict": counts,
        "lanes": lanes,
    }


def figures(bucket: Bucket) -> dict[str, Any]:
    """A series' counts over a span, with latency percentiles estimated from its bins."""
    return {
        "requests": bucket.requests,
        "errors": bucket.errors,
        "error_rate": bucket.errors / bucket.requests if bucket.requests else None,
        "pushbacks": bucket.pushbacks,
        **hedge_figures(bucket),
        "latency_p50": binned_quantile(bucket.latency, 0.5),
        "latency_p99": binned_quantile(bucket.latency, 0.99),
        "ttft_p50": binned_quantile(bucket.ttft, 0.5),
        "ttft_p99": binned_quantile(bucket.ttft, 0.99),
        "prompt_tokens": bucket.prompt_tokens,
        "completion_tokens": bucket.completion_tokens,
        "cost_usd": round(bucket.cost, 6),
        "errors_by_code": dict(sorted(bucket.error_codes.items(), key=lambda kv: -kv[1])),
    }


def hedge_figures(bucket: Bucket) -> dict[str, Any]:
    """Hedges raced over a span: how many (won and lost), and per call (``None``: no call).

    A hedge is a second attempt a slow first one started (``hedge:``); it won when it
    answered first, lost when the first attempt did. The same count as
    ``laneway_hedges_total{outcome=~"hedge_won|hedge_lost"}``.
    """
    hedges = bucket.hedges_won + bucket.hedges_lost
    return {
        "hedges": hedges,
        "hedges_won": bucket.hedges_won,
        "hedges_lost": bucket.hedges_lost,
        "hedge_rate": hedges / bucket.requests if bucket.requests else None,
    }


def _figures(history: History, lane: str, source: str, last: int) -> dict[str, Any]:
    points = history.points(lane, source, last // SLOTS_PER_MINUTE, POINTS)
    hour = Bucket(last)
    for point in points:
        hour.add(point)
    return {
        "now": figures(history.span(lane, source, last - NOW_BUCKETS + 1, last)),
        "hour": figures(hour),
        "points": {
            "requests": [p.requests for p in points],
            "errors": [p.errors for p in points],
            "hedges": [p.hedges_won + p.hedges_lost for p in points],
            "latency_p99": [binned_quantile(p.latency, 0.99) for p in points],
        },
    }


def _capped(data: dict[str, Any], deadline: float | None) -> dict[str, Any]:
    """The figures with binned latencies held to the enforced deadline.

    A bin stands for its geometric middle, which for calls cut at the
    deadline lies above it; no call ran longer than the deadline.
    """
    if deadline is None:
        return data
    for span in ("now", "hour"):
        for name in ("latency_p50", "latency_p99", "ttft_p50", "ttft_p99"):
            value = data[span][name]
            if value is not None and value > deadline:
                data[span][name] = deadline
    points = data["points"]["latency_p99"]
    data["points"]["latency_p99"] = [p if p is None else min(p, deadline) for p in points]
    return data


def _lane(standing: LaneStanding, history: History, last: int) -> dict[str, Any]:
    sources = [_source(standing, s, history, last) for s in standing.sources]
    data = _capped(_figures(history, standing.name, LANE, last), standing.deadline)
    verdict, reasons = _lane_verdict(standing, sources, data["now"])
    if verdict == "ok":
        reasons = _hour_reasons(data["hour"])
        verdict = "warn" if reasons else "ok"
    return {
        "name": standing.name,
        "kind": standing.kind,
        "ready": standing.ready,
        "problems": list(standing.problems),
        "panicking": standing.panicking,
        "fallback_lanes": list(standing.fallbacks),
        "serves_via": standing.serves_via,
        "verdict": verdict,
        "reasons": reasons,
        **data,
        "sources": sources,
    }


def _source(lane: LaneStanding, s: SourceStanding, history: History, last: int) -> dict[str, Any]:
    data = _capped(_figures(history, lane.name, s.name, last), lane.deadline)
    verdict, reasons = _source_verdict(s, data["now"])
    concurrency = s.concurrency
    quota = s.quota
    return {
        "name": s.name,
        "provider": s.provider,
        "model": s.model,
        "ready": s.ready,
        "problems": list(s.problems),
        "verdict": verdict,
        "reasons": reasons,
        "health": round(s.health, 3) if s.tried else None,
        "tier": s.tier if s.tried else "untried",
        "breaker": s.breaker,
        "breaker_reopens_in": None if s.reopens_in is None else round(s.reopens_in, 1),
        "last_failure": s.last_failure,
        "pushed_back_for": round(s.pushed_back_for, 1),
        "concurrency": None
        if concurrency is None
        else {
            "limit": round(concurrency.limit, 2),
            "in_flight": concurrency.in_flight,
            "min": concurrency.min,
            "max": concurrency.max,
        },
        "quota": None
        if quota is None
        else {
            "rpm": quota.rpm,
            "tpm": quota.tpm,
            "requests": quota.used.requests,
            "tokens": quota.used.tokens,
            "group": quota.shared_with,
        },
        **data,
    }


def _source_verdict(s: SourceStanding, now: dict[str, Any]) -> tuple[str, list[str]]:
    """``down`` when it cannot or will not be called; ``warn`` when it is held back."""
    if not s.ready:
        return "down", list(s.problems)
    if s.breaker == "open":
        return "down", [f"breaker open, probe in {s.reopens_in or 0:.0f} s"]
    reasons = []
    if s.breaker == "half-open":
        reasons.append("breaker half-open: the next attempt probes")
    if s.tried and s.tier != "credible":
        reasons.append(f"health {s.health:.0%}: {s.tier}, tried after credible sources")
    if s.pushed_back_for > 0:
        reasons.append(f"Retry-After: {s.pushed_back_for:.0f} s left")
    reasons += _quota_reasons(s)
    if s.concurrency is not None and s.concurrency.in_flight >= int(s.concurrency.limit):
        reasons.append(f"concurrency full ({s.concurrency.in_flight} in flight)")
    rate = now["error_rate"]
    if rate is not None and rate >= ERRORS_WARN:
        reasons.append(f"{rate:.0%} of attempts failed in the last minute")
    return ("warn" if reasons else "ok"), reasons


def _quota_reasons(s: SourceStanding) -> list[str]:
    quota = s.quota
    if quota is None:
        return []
    out = []
    if quota.rpm and quota.used.requests >= QUOTA_WARN * quota.rpm:
        out.append(f"rpm {quota.used.requests} of {quota.rpm}")
    if quota.tpm and quota.used.tokens >= QUOTA_WARN * quota.tpm:
        out.append(f"tpm {quota.used.tokens} of {quota.tpm}")
    return out


def _hour_reasons(hour: dict[str, Any]) -> list[str]:
    """A lane quiet in the last minute whose calls of the hour mostly failed is worth a look."""
    rate = hour["error_rate"]
    if rate is None or rate < ERRORS_DOWN:
        return []
    codes = ", ".join(f"{code} {n}" for code, n in hour["errors_by_code"].items())
    return [f"{hour['errors']} of {hour['requests']} calls failed in the last hour ({codes})"]


def _lane_verdict(
    standing: LaneStanding, sources: list[dict[str, Any]], now: dict[str, Any]
) -> tuple[str, list[str]]:
    """``down`` when no call can succeed (or most just failed); ``warn`` when a part ails."""
    if not standing.ready:
        reason = "not ready: " + "; ".join(standing.problems)
        if standing.serves_via is None:
            return "down", [reason]
        return "warn", [f"{reason}; its calls go to fallback lane {standing.serves_via}"]
    runnable = [s for s in sources if s["ready"]]
    if standing.panicking or all(s["verdict"] == "down" for s in runnable):
        return "down", ["every source is down: calls go to the least recently failed (panic)"]
    reasons = []
    rate = now["error_rate"]
    if rate is not None and rate > 0:
        codes = ", ".join(f"{code} {n}" for code, n in now["errors_by_code"].items())
        reasons.append(f"{now['errors']} of {now['requests']} calls failed in the last minute")
        reasons[-1] += f" ({codes})"
    ailing = [s["name"] for s in sources if s["verdict"] != "ok"]
    if ailing:
        reasons.append("needs a look: " + ", ".join(ailing))
    if rate is not None and rate >= ERRORS_DOWN and now["requests"] >= 2:
        return "down", reasons
    return ("warn" if reasons else "ok"), reasons
