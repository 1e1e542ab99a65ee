"""Prometheus metrics: a ``CallObserver`` over a private ``CollectorRegistry``.

An adapter-layer package: it depends on ``laneway.core`` and
``prometheus_client`` only (prices and the telemetry queue arrive by shape).
Serve the text with ``render_metrics(metrics)``. Workers of one server share
their figures through a ``SharedFolder`` named by ``SHARE_DIR_ENV``.
"""

from laneway.metrics.collect import Metrics, render_metrics
from laneway.metrics.share import SHARE_DIR_ENV, SharedFolder
from laneway.metrics.watched import QueueReport

__all__ = ["SHARE_DIR_ENV", "Metrics", "QueueReport", "SharedFolder", "render_metrics"]
