"""The library surface: factories and lane lookup (``gather_bounded``: ``test_bounded.py``)."""

from __future__ import annotations

import pytest

from laneway import Laneway
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
        with pytest.raises(RequestInvalid, match="is of kind chat"):
            await lw.embed("lane", ["x"])


async def test_lane_with_unset_key_is_not_ready(sim) -> None:
    config = one_lane(sim, "ok")
    source = config.lanes["lane"].sources[0].model_copy(update={"api_key": Secret(env="NOPE_KEY")})
    config.lanes["lane"].sources[0] = source
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(LaneNotReady, match="NOPE_KEY"):
            await lw.chat("lane", [{"role": "user", "content": "x"}])
