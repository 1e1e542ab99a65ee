"""Which ``OTEL_*`` settings turn traces on, and what the serve wiring builds from them."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider

from laneway.app.composer import build_gateway
from laneway.app.feed import RecordFeed
from laneway.core.errors import ConfigError
from laneway.server import Gateway
from laneway.sim import RunningSim
from laneway.tracing import SpanObserver, observer_from_env, tracing_wanted
from laneway.tracing.setup import check_tracing, describe_tracing, exporter_name
from tests.helpers import unique_spec
from tests.server.support import HELLO, config, post, serve_app, source

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
)


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        (ENDPOINT, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, False),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
    ],
)
def test_traces_are_wanted_only_when_the_variables_ask(
    environ: dict[str, str], wanted: bool
) -> None:
    assert tracing_wanted(environ) is wanted


def test_no_variables_no_observer() -> None:
    assert observer_from_env({}) is None


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin'"),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, "exactly one of otlp, console"),
        ({**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL='grpc'"),
    ],
)
def test_an_exporter_laneway_lacks_is_refused_by_name(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        exporter_name(environ)


def test_the_traces_protocol_overrides_the_general_one() -> None:
    environ = {
        **ENDPOINT,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    }
    assert exporter_name(environ) == "otlp"


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({}, None),
        (ENDPOINT, "traces: OTLP/HTTP to http://127.0.0.1:4318/v1/traces"),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://u:secret@collector:4318/t?k=secret"},
            "traces: OTLP/HTTP to https://collector:4318/t",
        ),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "traces: OTLP/HTTP to http://localhost:4318/v1/traces"),
        (
            {"OTEL_TRACES_EXPORTER": "console"},
            "traces: printed to stdout (OTEL_TRACES_EXPORTER=console)",
        ),
    ],
)
def test_the_banner_says_where_traces_go(environ: dict[str, str], said: str | None) -> None:
    assert describe_tracing(environ) == said


def test_a_bad_setting_is_refused_before_serving_and_none_is_fine() -> None:
    check_tracing({"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_SDK_DISABLED": "true"})
    with pytest.raises(ConfigError, match="zipkin"):
        check_tracing({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_the_decision_loads_nothing_of_opentelemetry() -> None:
    code = (
        "from laneway.tracing import observer_from_env; observer_from_env({}); "
        "import sys; print(*sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [m for m in done.stdout.split() if m.split(".")[0] == "opentelemetry"] == []


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback OTLP/HTTP trace receiver: its URL and the bodies posted to ``/v1/traces``."""
    bodies: list[bytes] = []

    class Receive(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path == "/v1/traces":
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the test reads the bodies."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
    # ``shutdown`` waits for the serving loop's next poll: every 10 ms, not the default 0.5 s.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def observers(gateway: Gateway) -> list[object]:
    """The gateway's call observers, those behind its record feed included."""
    found: list[object] = []
    for observer in gateway.engine.recorder.observers:
        found.extend(observer.consumers if isinstance(observer, RecordFeed) else [observer])
    return found


def span_names(bodies: list[bytes]) -> list[str]:
    """The names of every span in the posted export requests."""
    names: list[str] = []
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                names.extend(span.name for span in scope.spans)
    return names


async def test_serve_exports_spans_over_otlp_http(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sim: RunningSim, receiver
) -> None:
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    settings = config({"lane": {"sources": [source(sim, unique_spec(""))]}})
    untraced = build_gateway(settings, {}, tmp_path)
    assert not any(isinstance(o, SpanObserver) for o in observers(untraced))
    await untraced.engine.aclose()
    url, bodies = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    gateway = build_gateway(settings, {}, tmp_path)
    (observer,) = [o for o in observers(gateway) if isinstance(o, SpanObserver)]
    provider = observer.provider
    assert isinstance(provider, TracerProvider)
    with serve_app(gateway) as running:
        async with aiohttp.ClientSession() as http:
            body = {"model": "lane", "messages": HELLO}
            status, _, _ = await post(http, f"{running.url}/v1/chat/completions", body)
    assert status == 200
    assert provider.force_flush(timeout_millis=10_000)
    provider.shutdown()
    assert sorted(span_names(bodies)) == ["attempt 1 openai:sim-model", "chat lane"]
