"""The upstream HTTP client inside ``laneway serve``: aiohttp against pyreqwest, one run.

    .venv/bin/python bench/transport_ab.py [--rounds 4] [--keyed]

``bench/http_stack.py`` measures clients bare, in a process that does nothing else; this
measures the one that wins there where it would run. Two ``laneway serve`` processes with
the same config (one chat lane on a fixed nginx upstream; a plain lane, or with ``--keyed``
a key with an ``rpm``), both on CPU 0 in turn, nginx and wrk on CPU 1: one as shipped
(aiohttp), one whose non-streamed upstream calls go through ``PyreqwestTransport`` below
(its streams stay on aiohttp; the benchmark sends none). pyreqwest is taken from
``bench/.venv-tmp`` (``http_stack.py`` installs it there), never from the project's
environment. Each round runs each server for 5 s at c=32 after a 1 s warm-up; the figures
are the medians over rounds of req/s and of the server process's CPU (all its threads,
tokio's included) per request, then one 5 s run at c=1 for the p50. Written to
``docs/benchmarks.md`` (section ``transport-ab``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _wrk
from _ab import alternate, publish, section
from _procs import Proc, free_port, spawn, wait_ready
from http_stack import TMP_VENV, ensure_tmp_packages
from nginx_upstream import start_nginx

COMMAND = ".venv/bin/python bench/transport_ab.py"
SERVER_CPU, LOAD_CPU = 0, 1
CLIENTS = ("aiohttp", "pyreqwest")


def serve_on_pyreqwest(argv: list[str]) -> int:
    """``laneway serve ARGV`` with its non-streamed upstream calls on pyreqwest."""
    site = next((TMP_VENV / "lib").glob("python3*/site-packages"))
    sys.path.append(str(site))
    from pyreqwest import exceptions
    from pyreqwest.client import Client, ClientBuilder

    import laneway.app.composer
    import laneway.app.engine
    from laneway.cli.main import main
    from laneway.core.errors import AttemptFailure
    from laneway.core.failures import FailureKind
    from laneway.core.transport import HttpRequest, HttpResponse
    from laneway.http.aiohttp import AiohttpTransport

    class PyreqwestTransport(AiohttpTransport):
        """Whole answers over pyreqwest; streams as the parent sends them."""

        def __init__(self) -> None:
            super().__init__()
            self._pool: Client | None = None

        async def send(self, request: HttpRequest) -> HttpResponse:
            if self._pool is None:
                builder = ClientBuilder().max_connections(1000).error_for_status(False)
                self._pool = builder.no_proxy().build()
            call = self._pool.request(request.method, request.url)
            built = call.headers(dict(request.headers)).body_bytes(request.body).build()
            try:
                answer = await built.send()
                body = bytes(await answer.bytes())
            except exceptions.ConnectError as exc:
                raise AttemptFailure(FailureKind.CONNECT, f"cannot reach upstream: {exc}") from exc
            except exceptions.RequestError as exc:
                raise AttemptFailure(FailureKind.CUT, f"answer broken off: {exc}") from exc
            return HttpResponse(answer.status, answer.headers, body)

    laneway.app.engine.open_transport = PyreqwestTransport
    laneway.app.composer.open_transport = PyreqwestTransport  # type: ignore[attr-defined]
    return main(argv)


def start(stack: ExitStack, client: str, config: Path) -> tuple[Proc, int]:
    """One ``laneway serve`` on CPU 0 whose upstream client is ``client``."""
    port = free_port()
    entry = [sys.executable, "-m", "laneway"]
    if client == "pyreqwest":
        entry = [sys.executable, __file__, "--serve-pyreqwest"]
    serve = ["serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    proc = spawn(client, [*entry, *serve, "--log-level", "warning"], cpu=SERVER_CPU)
    stack.callback(proc.stop)
    wait_ready(proc, port, setup.PATH, setup.request_body(setup.LANE))
    return proc, port


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, dict[str, float]]:
    """Each client's median req/s and CPU µs a request at c=32, and its p50 at c=1."""
    with ExitStack() as stack:
        nginx = start_nginx(free_port(), cpu=LOAD_CPU)
        stack.callback(nginx.proc.stop)
        config = setup.laneway_config(nginx.url, {"url": "none"})
        if not args.keyed:
            config["server"] = {"host": "127.0.0.1", "metrics": False}
        path = setup.write_yaml(scratch / "laneway.yaml", config)
        servers = {client: start(stack, client, path) for client in CLIENTS}
        headers = setup.AUTH_HEADERS if args.keyed else {}
        body = setup.request_body(setup.LANE)
        script = _wrk.write_script(scratch / "post.lua", body, headers)
        return alternate(servers, script, setup.PATH, args.rounds, LOAD_CPU)


def render(figures: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    """The section: one row per client, ratios against aiohttp."""
    lane = "a key with an `rpm`" if args.keyed else "a plain lane (no key, metrics, telemetry)"
    setting = (
        f"One chat lane on nginx, {lane}, access log off; {args.rounds} rounds of 5 s at "
        "c=32 (medians), then 5 s at c=1. CPU is the server process's, every thread."
    )
    title = "Upstream client inside `laneway serve`: aiohttp vs pyreqwest"
    command = COMMAND + (" --keyed" if args.keyed else "")
    return section(title, command, setting, figures, "upstream client", "aiohttp")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--keyed", action="store_true", help="a key with an rpm on every call")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    reason = ensure_tmp_packages(("pyreqwest",))["pyreqwest"]
    if reason is not None:
        print(f"pyreqwest unavailable: {reason}", file=sys.stderr)
        return 1
    figures = measure(args, Path(tempfile.mkdtemp(prefix="transport-ab-")))
    publish("transport-ab", render(figures, args), write=not args.no_write)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-pyreqwest"]:
        raise SystemExit(serve_on_pyreqwest(sys.argv[2:]))
    raise SystemExit(main())
