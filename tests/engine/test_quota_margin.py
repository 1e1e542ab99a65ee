"""A quota slot is reused only ``HELD_PAST_WINDOW`` after the upstream's window.

Found by ``laneway simulate`` (scenarios 1 and 5): a slot reused exactly one
window after it was taken reached the sim 3-12 ms before the sim's own
window let go of it, and was answered 429.
"""

from __future__ import annotations

from laneway.app import build_lane
from laneway.clocks import VirtualClock
from laneway.config.models import ChatLaneConfig
from laneway.engine.admission import Admitted, CallSources, SourceAdmission
from laneway.policy.quota import HELD_PAST_WINDOW
from laneway.policy.waits import Wait
from laneway.state.admission.memory import MemoryStore


async def test_a_slot_frees_only_after_the_window_and_the_margin() -> None:
    clock = VirtualClock()
    admission = SourceAdmission(MemoryStore(clock), clock)
    source = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "rpm": 1}
    lane = build_lane("l", ChatLaneConfig.model_validate({"sources": [source]}), {})
    first = await admission.pick(lane, CallSources(started=clock.now()))
    assert isinstance(first, Admitted)
    await admission.settle(first, None, None)
    clock.advance(60.0)
    refused = await admission.pick(lane, CallSources(started=clock.now()))
    assert isinstance(refused, Wait)
    assert refused.seconds == HELD_PAST_WINDOW
    clock.advance(HELD_PAST_WINDOW)
    assert isinstance(await admission.pick(lane, CallSources(started=clock.now())), Admitted)
