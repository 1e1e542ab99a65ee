"""nginx as a fixed-response OpenAI upstream: the "physical limit" for gateway benchmarks.

A gateway benchmark needs an upstream that is never the bottleneck, otherwise it measures
the mock instead of the gateway. nginx answering from its config (``return 200 '...'``)
does no application work at all, so whatever throughput a gateway reaches in front of
it is the gateway's own ceiling on this machine.

It runs in the foreground (``daemon off``) as our child, from a throwaway prefix dir,
so it never touches the system nginx setup or needs the service enabled.

Smoke test:  ``.venv/bin/python bench/nginx_upstream.py``
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from _fixed_asgi import CHAT_COMPLETION, REQUEST_BODY
from _procs import LOOPBACK, Proc, free_port, post_once, spawn, wait_ready

# Both forms a gateway may route to: plain OpenAI, and per-backend "/b/<name>/" prefixes.
LOCATION_REGEX = r"^(/b/[^/]+)?/v1/chat/completions(/.*)?$"


def _nginx_quote(text: str) -> str:
    """Single-quoted nginx string; the body must not contain ``$`` (it would interpolate)."""
    if "$" in text:
        raise ValueError("nginx would treat '$' in the response body as a variable")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render_config(prefix: Path, port: int, body: bytes = CHAT_COMPLETION) -> str:
    """nginx.conf for one worker answering chat completions from memory.

    ``keepalive_requests`` is raised because nginx's default (1000) would close benchmark
    connections every 1000 requests and add reconnect cost to the figures.
    """
    temp_paths = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
master_process on;
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log stderr warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    server_tokens off;
    keepalive_requests 10000000;
    keepalive_timeout 75s;
{temp_paths}
    server {{
        listen {LOOPBACK}:{port} backlog=4096;
        location ~ {LOCATION_REGEX} {{
            default_type application/json;
            if ($request_method != POST) {{
                return 405;
            }}
            return 200 {_nginx_quote(body.decode())};
        }}
        location / {{
            return 404;
        }}
    }}
}}
"""


@dataclass
class NginxHandle:
    """A running nginx; use as a context manager or call :meth:`stop` (idempotent)."""

    port: int
    prefix: Path
    proc: Proc

    @property
    def url(self) -> str:
        """Base URL to configure as the gateway's upstream ``api_base``."""
        return f"http://{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        """Stop master and worker (whole process group), then remove the prefix dir."""
        self.proc.stop()
        shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self) -> NginxHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def nginx_binary() -> str:
    """Path of Debian's nginx (``apt-get install -y nginx``); fail early with the fix."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise FileNotFoundError("nginx not found: run `apt-get install -y nginx`")
    return found


def start_nginx(port: int, cpu: int | None = None) -> NginxHandle:
    """Start nginx on 127.0.0.1:``port`` and return once it answers a chat completion.

    ``cpu`` pins it (taskset) so a benchmark can keep it off the gateway's core.
    """
    prefix = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
    conf = prefix / "nginx.conf"
    conf.write_text(render_config(prefix, port), encoding="utf-8")
    # -e: error log before the config is read, else nginx opens /var/log/nginx/error.log.
    cmd = [nginx_binary(), "-p", str(prefix), "-c", str(conf), "-e", "stderr"]
    handle = NginxHandle(port=port, prefix=prefix, proc=spawn("nginx", cmd, cpu=cpu))
    try:
        wait_ready(handle.proc, port, "/v1/chat/completions", REQUEST_BODY)
    except BaseException:
        handle.stop()
        raise
    return handle


def _smoke() -> int:
    """Check the routes a gateway benchmark relies on, then stop."""
    expectations = {
        "/v1/chat/completions": 200,
        "/b/openai-1/v1/chat/completions": 200,
        "/v1/chat/completions/extra": 200,
        "/v1/models": 404,
        "/b/x/y/v1/chat/completions": 404,
    }
    with start_nginx(free_port()) as nginx:
        for path, want in expectations.items():
            status, body = post_once(nginx.port, path, REQUEST_BODY)
            ok = status == want and (want != 200 or body == CHAT_COMPLETION)
            print(f"{'ok ' if ok else 'BAD'} POST {path} -> {status} ({len(body)} bytes)")
            if not ok:
                return 1
        print(f"nginx answered on {nginx.url}; stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(_smoke())
