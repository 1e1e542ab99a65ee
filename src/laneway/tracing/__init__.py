"""OpenTelemetry traces of finished calls (the optional ``laneway[otel]`` extra).

An adapter-layer package: it depends on ``laneway.core`` and the OpenTelemetry
SDK only. Spans are built after the fact from each ``CallRecord`` by a
``CallObserver`` (``SpanObserver``), so tracing adds nothing to the request
path beyond that observer call. ``observer_from_env`` builds one exporting over
OTLP/HTTP when the standard ``OTEL_*`` variables ask for traces. Importing this
package loads nothing of OpenTelemetry: the names below are imported on first use.
"""

from typing import TYPE_CHECKING

from laneway.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from laneway.tracing.setup import observer_from_env, tracing_wanted
    from laneway.tracing.spans import SpanObserver

__all__ = ["SpanObserver", "observer_from_env", "tracing_wanted"]

__getattr__ = lazy_attributes(
    __name__,
    {
        "SpanObserver": "laneway.tracing.spans",
        "observer_from_env": "laneway.tracing.setup",
        "tracing_wanted": "laneway.tracing.setup",
    },
)
