"""Prometheus metrics: a ``CallObserver`` over a private ``CollectorRegistry``.

An adapter-layer package: it depends on ``laneway.core`` and
``prometheus_client`` only (prices and the telemetry queue arrive by shape).
Serve the text with ``render_metrics(metrics)``.
"""

from laneway.metrics.collect import Metrics, QueueReport, render_metrics

__all__ = ["Metrics", "QueueReport", "render_metrics"]
