"""Prometheus figures: known tokens only, unknowns and unpriced calls counted apart."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from laneway.core.records import CallMeta, CallRecord
from laneway.core.types import Attempt, Usage
from laneway.metrics import Metrics, render_metrics

KNOWN = Usage(100, 40, 140, 10, None, source="provider")
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def record(usage: Usage, source: str = "s", outcome: str = "ok", **fields) -> CallRecord:
    attempts = (Attempt(source, "503", 0.1, pushback=True), Attempt(source, "ok", 0.2))
    return CallRecord(
        1.0, "l", "chat", outcome, 0.3, attempts, source=source, usage=usage, ttfb=0.05, **fields
    )


def price(record: CallRecord) -> tuple[float | None, str]:
    if not record.usage.known:
        return None, "usage_unknown"
    return (0.25, "priced") if record.source == "s" else (None, "unpriced")


def samples(metrics: Metrics) -> Samples:
    body, content_type = render_metrics(metrics)
    assert content_type.startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


def test_calls_attempts_pushbacks_and_latency() -> None:
    m = Metrics(price)
    m.observe(record(KNOWN))
    m.observe(record(Usage(), outcome="error", error="deadline_exceeded"))
    found = samples(m)
    assert value(found, "laneway_requests_total", lane="l", source="s", outcome="ok") == 1
    assert (
        value(found, "laneway_errors_total", lane="l", source="s", error="deadline_exceeded") == 1
    )
    assert value(found, "laneway_attempts_total", lane="l", source="s", outcome="503") == 2
    assert value(found, "laneway_pushbacks_total", lane="l", source="s") == 2
    assert value(found, "laneway_latency_seconds_count", lane="l") == 2
    assert value(found, "laneway_latency_seconds_bucket", lane="l", le="0.5") == 2
    assert value(found, "laneway_latency_seconds_bucket", lane="l", le="0.25") == 0
    assert value(found, "laneway_ttfb_seconds_sum", lane="l") == 0.1


def test_only_known_tokens_count_and_unknown_usage_is_counted_apart() -> None:
    m = Metrics(price)
    m.observe(record(KNOWN))
    m.observe(record(Usage(7, None, None, source="provider")))
    m.observe(record(Usage()))
    found = samples(m)
    tokens = {
        k: value(
            found, "laneway_tokens_total", lane="l", source="s", kind=k, usage_source="provider"
        )
        for k in ("prompt", "completion", "reasoning", "cached")
    }
    assert tokens == {"prompt": 107, "completion": 40, "reasoning": 10, "cached": None}
    assert value(found, "laneway_usage_unknown_calls_total", lane="l", source="s") == 1


def test_cost_counts_priced_calls_and_unpriced_ones_apart() -> None:
    m = Metrics(price)
    m.observe(record(KNOWN))
    m.observe(record(KNOWN, source="free"))
    found = samples(m)
    assert value(found, "laneway_cost_usd_total", lane="l", source="s", basis="priced") == 0.25
    assert value(found, "laneway_cost_usd_total", lane="l", source="free", basis="priced") is None
    assert value(found, "laneway_unpriced_calls_total", lane="l", source="free") == 1


class Queue:
    depth, dropped, written, failed, spooled = 4, 2, 10, 3, 7


def test_telemetry_queue_is_read_at_scrape_time() -> None:
    m = Metrics()
    m.watch_queue(Queue())
    found = samples(m)
    assert value(found, "laneway_telemetry_queue_depth") == 4
    assert value(found, "laneway_telemetry_dropped_total") == 2
    assert value(found, "laneway_telemetry_failed_total") == 3
    assert value(found, "laneway_telemetry_spooled") == 7


def test_per_key_requests_tokens_cost_and_refusals() -> None:
    m = Metrics(price)
    refusals = {("team-a", "rpm"): 2, ("team-b", "daily_budget"): 1}
    m.watch_key_refusals(refusals)
    for _ in range(2):
        m.observe(record(KNOWN, meta=CallMeta(caller="team-a")))
    m.observe(record(Usage(), outcome="error", error="upstream_error", meta=CallMeta("r", "b")))
    m.observe(record(KNOWN))
    found = samples(m)
    assert value(found, "laneway_key_requests_total", key="team-a", outcome="ok") == 2
    assert value(found, "laneway_key_requests_total", key="b", outcome="error") == 1
    assert value(found, "laneway_key_tokens_total", key="team-a", kind="prompt") == 200
    assert value(found, "laneway_key_tokens_total", key="team-a", kind="completion") == 80
    assert value(found, "laneway_key_tokens_total", key="b", kind="prompt") is None
    assert value(found, "laneway_key_cost_usd_total", key="team-a") == 0.5
    assert value(found, "laneway_key_cost_usd_total", key="b") is None
    assert value(found, "laneway_key_refusals_total", key="team-a", limit="rpm") == 2
    refusals["team-a", "rpm"] = 3
    found = samples(m)
    assert value(found, "laneway_key_refusals_total", key="team-a", limit="rpm") == 3
    assert value(found, "laneway_key_refusals_total", key="team-b", limit="daily_budget") == 1
