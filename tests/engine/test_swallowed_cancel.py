"""The deadline holds when a library swallows the deadline's cancellation.

Found by ``laneway simulate`` (scenario 5, two replicas on Redis): a call
queued for quota ran 56-74 s past its 30 s deadline. The deadline's cancel
had landed in redis-py's ``asyncio.wait_for`` while its write completed, and
Python 3.11's ``wait_for`` then returns the result and drops the cancel; the
call's cancel scope had fired once and could not fire again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import pytest

from laneway.config.models import LanewayConfig
from laneway.core.outcomes import SourceRecord
from laneway.errors import DeadlineExceeded
from laneway.state.admission.base import Admission, Ask, Peek, SourceStore
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]


class SwallowingStore:
    """A store whose ``admit`` first pauses and drops a cancellation that arrives meanwhile,
    as Python 3.11's ``wait_for`` does when its result races the cancel."""

    def __init__(self, inner: SourceStore) -> None:
        self.inner = inner
        self.pause = 0.0

    async def admit(self, lane: str, sources: Sequence[str], asks: Sequence[Ask]) -> Admission:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(self.pause)
        return await self.inner.admit(lane, sources, asks)

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        return await self.inner.settle(lane, ask, tokens, code)

    async def release(self, lane: str, ask: Ask) -> None:
        await self.inner.release(lane, ask)

    async def peek(
        self, lane: str, sources: Sequence[str], quotas: Sequence[tuple[str, float]]
    ) -> Peek:
        return await self.inner.peek(lane, sources, quotas)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("quota_left", [True, False])
@in_virtual_time
async def test_a_swallowed_cancel_still_ends_the_call_at_its_deadline(
    vsim: VirtualSim, quota_left: bool
) -> None:
    source = {"base_url": sim_url(vsim, unique_spec("ok")), "model": "m", "rpm": 2}
    config = LanewayConfig.model_validate(
        {"lanes": {"l": {"deadline": "300ms", "sources": [source]}}}
    )
    async with vsim.laneway(config) as lw:
        admission = lw.engine.loop.admission
        store = SwallowingStore(admission.store)
        admission.store = store
        await lw.chat("l", MESSAGES)
        if not quota_left:
            await lw.chat("l", MESSAGES)
        store.pause = 0.5
        started = vsim.clock.now()
        async with asyncio.timeout(10):
            with pytest.raises(DeadlineExceeded):
                await lw.chat("l", MESSAGES)
        assert vsim.clock.now() - started == pytest.approx(0.3), "at the deadline, not after"
