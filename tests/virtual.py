"""Engine tests in virtual time: the simulator in the test's own event loop, on a VirtualClock.

``VirtualSim`` serves ``laneway.sim``'s app through ``AsgiTransport`` with
the clock's time, so a spec's waits (``sleep=5``, ``retry_after=2``) and the
engine's (attempt timeouts, backoff, deadlines) are timers on one
``VirtualTimeLoop``: a test runs in milliseconds and its timings are exact.
Write the test as usual, ask for the ``vsim`` fixture and decorate it with
``in_virtual_time``; read time from ``vsim.clock``. A test of code that waits
only on timers and needs no simulator (the telemetry writer) takes
``on_virtual_clock`` instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from laneway import Laneway
from laneway.clocks import VirtualClock
from laneway.config.models import LanewayConfig
from laneway.http.asgi import AsgiTransport
from laneway.sim import create_app

TestFn = Callable[..., Coroutine[Any, Any, None]]


class VirtualSim:
    """The simulator served in-process on ``clock``: reachable only through ``transport``."""

    base_url = "http://sim.virtual"

    def __init__(self, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        self.started = self.clock.now()
        """The clock's reading at the sim's start: its hit times count from here."""
        self.app = create_app(self.clock.now, self.clock.wall)
        self.transport = AsgiTransport(self.app)

    def hits(self, spec: str) -> int:
        """Requests the sim received for ``spec``."""
        return len(self.app.hit_times(spec))

    def hit_times(self, spec: str) -> list[float]:
        """When each request for ``spec`` arrived, in virtual seconds since the sim started."""
        return self.app.hit_times(spec)

    def laneway(self, config: LanewayConfig, environ: Mapping[str, str] | None = None) -> Laneway:
        """The library on this sim and this clock (``environ``: none unless given)."""
        env = environ or {}
        return Laneway.from_settings(
            config, environ=env, transport=self.transport, clock=self.clock
        )


def in_virtual_time(test: TestFn) -> Callable[..., None]:
    """Run the async ``test`` to completion on its ``vsim``'s virtual clock."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        vsim = kwargs.get("vsim")
        if not isinstance(vsim, VirtualSim):
            raise TypeError(f"{test.__name__} runs in virtual time: it must take the vsim fixture")
        vsim.clock.run(test(*args, **kwargs))

    return run


def on_virtual_clock(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """Run the async, argument-less ``test`` on a fresh ``VirtualClock``'s loop.

    For code that waits only on the loop's timers (``asyncio.sleep``,
    ``asyncio.timeout``): its waits cost no real time and the test reads them
    exactly from ``asyncio.get_running_loop().time()``. Not for sockets or threads.
    """

    @functools.wraps(test)
    def run() -> None:
        VirtualClock().run(test())

    return run
