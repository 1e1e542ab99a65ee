"""Hedged requests in virtual time: a slow first source raced by a second (issue 26)."""

from __future__ import annotations

from typing import Any

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]


def two_sources(vsim: VirtualSim, slow: str, fast: str, kind: str = "chat", **lane: Any) -> Laneway:
    model = "sim-embed" if kind == "embed" else "sim-model"
    sources = [
        {"provider": "openai", "base_url": sim_url(vsim, slow), "model": model, "priority": 0},
        {"provider": "openai", "base_url": sim_url(vsim, fast), "model": model, "priority": 1},
    ]
    body = {"kind": kind, "sources": sources, **lane}
    return vsim.laneway(LanewayConfig.model_validate({"lanes": {"lane": body}}))


@in_virtual_time
async def test_a_slow_first_attempt_is_raced_and_the_hedge_wins(vsim: VirtualSim) -> None:
    slow, fast = unique_spec("sleep=5"), unique_spec("ok")
    async with two_sources(vsim, slow, fast, hedge={"after": "200ms"}) as lw:
        started = vsim.clock.now()
        response = await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
        scraped = lw.metrics.render()[0].decode()
    assert elapsed == pytest.approx(0.2)
    assert [a.outcome for a in response.attempts] == ["cancelled", "hedge_won"]
    assert response.source == response.attempts[-1].source
    assert (vsim.hits(slow), vsim.hits(fast)) == (1, 1)
    assert 'laneway_hedges_total{lane="lane",outcome="hedge_won"} 1.0' in scraped
    assert 'laneway_hedges_total{lane="lane",outcome="cancelled"} 1.0' in scraped
    assert response.cost_unknown == "includes a cancelled attempt's unknown cost"


@in_virtual_time
async def test_no_hedge_when_the_first_attempt_answers_in_time(vsim: VirtualSim) -> None:
    first, second = unique_spec("sleep=0.1"), unique_spec("ok")
    async with two_sources(vsim, first, second, hedge={"after": "200ms"}) as lw:
        for _ in range(5):
            response = await lw.chat("lane", MESSAGES)
            assert [a.outcome for a in response.attempts] == ["ok"]
    assert (vsim.hits(first), vsim.hits(second)) == (5, 0)


@in_virtual_time
async def test_the_first_attempt_wins_and_the_hedge_is_cancelled(vsim: VirtualSim) -> None:
    first, second = unique_spec("sleep=0.3"), unique_spec("sleep=5")
    async with two_sources(vsim, first, second, hedge={"after": "200ms"}) as lw:
        started = vsim.clock.now()
        response = await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
    assert elapsed == pytest.approx(0.3)
    assert [a.outcome for a in response.attempts] == ["hedge_lost", "ok"]
    assert (vsim.hits(first), vsim.hits(second)) == (1, 1)


@in_virtual_time
async def test_the_budget_holds_the_share_of_hedges(vsim: VirtualSim) -> None:
    slow, fast = unique_spec("sleep=1"), unique_spec("ok")
    async with two_sources(vsim, slow, fast, hedge={"after": "200ms", "max_share": 0.1}) as lw:
        outcomes = [
            [a.outcome for a in (await lw.chat("lane", MESSAGES)).attempts] for _ in range(20)
        ]
    hedged = sum("hedge_won" in o for o in outcomes)
    assert hedged == vsim.hits(fast) == 3  # 1 + 0.1 x 20 calls of the minute
    assert vsim.hits(slow) == 20


@in_virtual_time
async def test_a_failed_hedge_lets_the_first_attempt_answer(vsim: VirtualSim) -> None:
    first, second = unique_spec("sleep=0.5"), unique_spec("status=503")
    async with two_sources(vsim, first, second, hedge={"after": "200ms"}) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in response.attempts] == ["503", "ok"]


@in_virtual_time
async def test_both_failing_is_one_retry_then_the_verdict(vsim: VirtualSim) -> None:
    from laneway.errors import UpstreamFailed

    first, second = unique_spec("sleep=0.5,status=503"), unique_spec("status=503")
    policy: dict[str, Any] = {"hedge": {"after": "200ms"}, "retries": 1, "retry_on": [503]}
    async with two_sources(vsim, first, second, backoff={"base": "10ms"}, **policy) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert vsim.hits(first) + vsim.hits(second) >= 3
    assert all(a.outcome == "503" for a in err.value.attempts)


@in_virtual_time
async def test_an_embeddings_call_is_hedged(vsim: VirtualSim) -> None:
    slow, fast = unique_spec("sleep=5"), unique_spec("ok")
    async with two_sources(vsim, slow, fast, kind="embed", hedge={"after": "300ms"}) as lw:
        started = vsim.clock.now()
        response = await lw.embed("lane", ["a", "b"])
        elapsed = vsim.clock.now() - started
    assert elapsed == pytest.approx(0.3)
    assert len(response.vectors or response.encoded) == 2
    assert (vsim.hits(slow), vsim.hits(fast)) == (1, 1)


@pytest.mark.parametrize(
    ("hedge", "sources", "message"),
    [
        ({"after": 0}, 2, "hedge.after must be positive"),
        ({"after": "2s"}, 2, "hedge.after 2s is above the attempt timeout"),
        ({"after": "100ms", "max_share": 1.5}, 2, "hedge.max_share must be from 0 to 1"),
        ({"after": "100ms"}, 1, "hedge needs a second source"),
    ],
)
def test_bad_hedges_are_refused_naming_the_field(
    hedge: dict[str, Any], sources: int, message: str
) -> None:
    from pydantic import ValidationError

    listed = [
        {"provider": "openai", "base_url": f"http://127.0.0.1:9/{n}/v1", "model": "m"}
        for n in range(sources)
    ]
    lane = {"attempt_timeout": "1s", "hedge": hedge, "sources": listed}
    with pytest.raises(ValidationError, match=message):
        LanewayConfig.model_validate({"lanes": {"lane": lane}})


def test_check_prints_the_hedge_and_its_bound() -> None:
    from laneway.cli.check import lane_report

    listed = [
        {"provider": "openai", "base_url": f"http://127.0.0.1:9/{n}/v1", "model": "m"}
        for n in range(2)
    ]
    lane = {
        "attempt_timeout": "2s",
        "retries": 1,
        "retry_on": [503],
        "hedge": {"after": "800ms"},
        "sources": listed,
    }
    config = LanewayConfig.model_validate({"lanes": {"lane": lane}})
    report = lane_report("lane", config.lanes["lane"], {})
    assert "hedge lane: after 800ms, max_share 0.1; at most 4 = 2 attempts + 2 hedges" in (
        "\n".join(report.notes)
    )


@in_virtual_time
async def test_an_unexpected_error_in_a_raced_attempt_releases_both_admissions(
    vsim: VirtualSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug raised by one attempt (not an attempt failure) ends the call; nothing stays held."""
    from laneway.engine.admission import SourceAdmission
    from laneway.engine.call import CallLoop

    released: list[str] = []
    release = SourceAdmission.release

    async def recorded(self: SourceAdmission, admitted: Any) -> None:
        released.append(admitted.source.name)
        await release(self, admitted)

    async def broken(self: CallLoop, *args: Any) -> Any:
        await vsim.clock.sleep(0.3)  # the hedge starts at 0.2 s, the first raises at 0.3 s
        raise RuntimeError("a bug in the attempt")

    monkeypatch.setattr(SourceAdmission, "release", recorded)
    monkeypatch.setattr(CallLoop, "_bounded", broken)
    async with two_sources(vsim, "ok", "ok", hedge={"after": "200ms"}) as lw:
        with pytest.raises(RuntimeError, match="a bug in the attempt"):
            await lw.chat("lane", MESSAGES)
    assert len(released) == 2
