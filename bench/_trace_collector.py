"""A local OTLP/HTTP collector for benchmarks: takes every export, answers 200, keeps nothing.

The cost ledger's traces row exports to it, so the row prices building and exporting
spans as a deployment with a collector pays them, not the retries of an exporter
whose collector is down.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from _procs import LOOPBACK


class _Taker(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def collector() -> Iterator[str]:
    """Serve until the block ends; yields the endpoint's base URL (``OTEL_..._ENDPOINT``)."""
    server = ThreadingHTTPServer((LOOPBACK, 0), _Taker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
