"""A fast loopback simulator of OpenAI-compatible LLM upstreams, with faults chosen by URL.

Point a client at `<base_url>/b/<spec>/v1` where `<spec>` is comma-separated tokens
such as `sleep=0.2,status=429,retry_after=1` or `cut_after=2`; plain `<base_url>/v1`
behaves normally. `GET /_hits`, `POST /_reset` and `GET /healthz` inspect and reset it.

Layer: a standalone test tool. It imports only the stdlib, orjson and uvicorn, never
other laneway modules, so it can fake upstreams for any of them.
"""

from laneway.sim._app import SimApp, create_app
from laneway.sim._server import RunningSim, main, serve, start_in_thread
from laneway.sim._spec import Behaviour, SpecError, parse_spec

__all__ = [
    "Behaviour",
    "RunningSim",
    "SimApp",
    "SpecError",
    "create_app",
    "main",
    "parse_spec",
    "serve",
    "start_in_thread",
]
