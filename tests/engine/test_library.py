"""The library surface: factories, lane lookup, gather_bounded."""

from __future__ import annotations

import asyncio

import pytest

from laneway import Laneway, gather_bounded
from laneway.config import Secret
from laneway.errors import ConfigError, LaneNotReady, RequestInvalid, UnknownLane
from tests.helpers import one_lane, sim_url, unique_spec


async def test_from_config_and_from_env(sim, tmp_path, monkeypatch) -> None:
    path = tmp_path / "laneway.yaml"
    url = sim_url(sim, unique_spec("ok"))
    path.write_text(
        f"lanes:\n  a:\n    sources:\n      - base_url: {url}\n        model: m\n"
        "        api_key: os.environ/SIM_KEY\n"
    )
    (tmp_path / ".env").write_text("SIM_KEY=from-dotenv\n")
    async with Laneway.from_config(path) as lw:
        assert (await lw.chat("a", [{"role": "user", "content": "x"}])).content
    monkeypatch.setenv("LANEWAY_CONFIG", str(path))
    async with Laneway.from_env() as lw:
        assert lw.engine.lanes["a"].problems == []


def test_from_env_without_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("LANEWAY_CONFIG", raising=False)
    with pytest.raises(ConfigError, match="LANEWAY_CONFIG"):
        Laneway.from_env()


async def test_unknown_lane_lists_the_lanes(sim) -> None:
    async with Laneway.from_settings(one_lane(sim, "ok"), environ={}) as lw:
        with pytest.raises(UnknownLane, match="lanes: lane"):
            await lw.chat("nope", [{"role": "user", "content": "x"}])
        with pytest.raises(RequestInvalid, match="messages"):
            await lw.chat("lane", [])
        with pytest.raises(RequestInvalid, match="is a chat lane"):
            await lw.embed("lane", ["x"])


async def test_lane_with_unset_key_is_not_ready(sim) -> None:
    config = one_lane(sim, "ok")
    source = config.lanes["lane"].sources[0].model_copy(update={"api_key": Secret(env="NOPE_KEY")})
    config.lanes["lane"].sources[0] = source
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(LaneNotReady, match="NOPE_KEY"):
            await lw.chat("lane", [{"role": "user", "content": "x"}])


async def test_gather_bounded_limits_concurrency_and_keeps_order() -> None:
    running = 0
    peak = 0

    async def job(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return i

    assert await gather_bounded(3, [job(i) for i in range(10)]) == list(range(10))
    assert peak == 3
