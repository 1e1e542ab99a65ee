"""Whether the ``OTEL_*`` variables ask for traces, and the exporting observer if so.

The decision reads only the environment and whether the extra is installed,
so ``laneway serve`` without either imports nothing of OpenTelemetry.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from laneway.core.errors import ConfigError
from laneway.core.records import CallObserver

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
EXPORTERS = ("otlp", "console")
"""``OTEL_TRACES_EXPORTER`` values laneway honours (``none`` turns tracing off)."""
HTTP_PROTOCOLS = ("http/protobuf",)
NOT_INSTALLED = (
    "OTEL_* variables ask for traces, but the OpenTelemetry SDK is not installed: "
    "pip install 'laneway[otel]'; no traces are exported"
)

log = logging.getLogger("laneway.tracing")


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    """True when the standard variables ask for traces (an endpoint or an exporter).

    ``OTEL_SDK_DISABLED=true`` and ``OTEL_TRACES_EXPORTER=none`` win over an endpoint.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(exporter) or any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def exporter_name(environ: Mapping[str, str]) -> str:
    """The trace exporter the variables name (``otlp`` by default); refuse what laneway lacks."""
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown or len(names) != 1:
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={environ['OTEL_TRACES_EXPORTER']!r}: laneway exports "
            f"traces with exactly one of {', '.join(EXPORTERS)} (or none)"
        )
    if names[0] == "otlp":
        protocol_of_traces(environ)
    return names[0]


def protocol_of_traces(environ: Mapping[str, str]) -> None:
    """Refuse an OTLP protocol other than HTTP/protobuf (the one exporter the extra installs)."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(name, "").strip()
        if protocol:
            if protocol not in HTTP_PROTOCOLS:
                raise ConfigError(
                    f"{name}={protocol!r}: laneway exports OTLP over HTTP (http/protobuf) only"
                )
            return


def check_tracing(environ: Mapping[str, str]) -> None:
    """Raise ``ConfigError`` when the variables ask for traces laneway cannot export.

    ``laneway serve`` calls it before starting workers, so a bad setting stops
    the start with its name instead of failing inside every worker.
    """
    if tracing_wanted(environ):
        exporter_name(environ)


def describe_tracing(environ: Mapping[str, str]) -> str | None:
    """Where traces go, for the start banner (``None`` when none are asked for).

    The endpoint is shown without any user, password or query it carries.
    """
    if not tracing_wanted(environ):
        return None
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return f"traces: none ({NOT_INSTALLED})"
    if exporter_name(environ) == "console":
        return "traces: printed to stdout (OTEL_TRACES_EXPORTER=console)"
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if not endpoint:
        base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
        endpoint = f"{base.rstrip('/')}/v1/traces"
    parts = urlsplit(endpoint)
    where = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
    return f"traces: OTLP/HTTP to {where}"


def observer_from_env(environ: Mapping[str, str]) -> CallObserver | None:
    """A ``SpanObserver`` exporting as the variables say, or ``None`` when they ask for none.

    Variables asking for traces without the extra installed log a warning and
    give ``None``: the gateway serves, untraced, rather than refusing to start.
    """
    if not tracing_wanted(environ):
        return None
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        log.warning(NOT_INSTALLED)
        return None
    exporter = exporter_name(environ)
    from laneway.tracing.spans import SpanObserver, exporting_provider

    return SpanObserver(exporting_provider(exporter))
