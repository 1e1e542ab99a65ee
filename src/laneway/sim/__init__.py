"""A fast loopback simulator of OpenAI-compatible LLM upstreams, with faults chosen by URL.

Point a client at `<base_url>/b/<spec>/v1` where `<spec>` is comma-separated tokens
such as `sleep=0.2,status=429,retry_after=1` or `cut_after=2`; plain `<base_url>/v1`
behaves normally. `GET /_hits`, `POST /_reset` and `GET /healthz` inspect and reset it.
A request of `hold` gets no answer, and a stream of `hold_after=N` goes silent after N
content chunks, until the test lets them go with `POST /_release?spec=<spec>` (or
`SimApp.release`): they outlast whatever the test does meanwhile, however long that takes,
and end the moment the test says so.
`laneway.sim.scenarios` scripts the faults a lane with a fallback must survive.

Layer: a standalone test tool. It imports only the stdlib, orjson and uvicorn, never
other laneway modules, so it can fake upstreams for any of them.
"""

from laneway.sim._app import SimApp, create_app
from laneway.sim._server import RunningSim, main, serve, start_in_thread
from laneway.sim._spec import Behaviour, SpecError, parse_spec
from laneway.sim.scenarios import FAULTS, FaultScenario, Specs, fault_scenario, refusing_port

__all__ = [
    "FAULTS",
    "Behaviour",
    "FaultScenario",
    "RunningSim",
    "SimApp",
    "SpecError",
    "Specs",
    "create_app",
    "fault_scenario",
    "main",
    "parse_spec",
    "refusing_port",
    "serve",
    "start_in_thread",
]
