"""Fallback to another lane: each lane's own policy, the caller's one deadline over the chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laneway import Laneway
from laneway.cli.main import main
from laneway.config import parse_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.errors import DeadlineExceeded, UpstreamRejected
from laneway.sim import RunningSim
from tests.helpers import Upstream, sim_url, unique_spec
from tests.state.test_deployments import count
from tests.virtual import VirtualSim, in_virtual_time

HELLO = [{"role": "user", "content": "hello"}]


def lanes(sim: Upstream, specs: dict[str, str], **bodies: dict[str, Any]) -> LanewayConfig:
    """One lane per spec; ``bodies`` add lane settings (``fallback_lanes``, deadlines)."""
    out = {
        name: {
            "sources": [{"base_url": sim_url(sim, spec), "model": "sim-model"}],
            **bodies.get(name, {}),
        }
        for name, spec in specs.items()
    }
    return LanewayConfig.model_validate({"lanes": out})


async def test_a_failed_lane_falls_back_to_the_next(sim: RunningSim) -> None:
    down, ok = unique_spec("status=500"), unique_spec("ok")
    config = lanes(sim, {"primary": down, "rescue": ok}, primary={"fallback_lanes": ["rescue"]})
    async with Laneway.from_settings(config, environ={}) as lw:
        answer = await lw.chat("primary", HELLO)
    assert answer.lane == "rescue"
    assert [(a.source, a.outcome) for a in answer.attempts] == [
        ("primary/openai:sim-model", "500"),
        ("openai:sim-model", "ok"),
    ]


async def test_the_callers_own_rejection_does_not_fall_back(sim: RunningSim) -> None:
    bad, ok = unique_spec("status=400"), unique_spec("ok")
    config = lanes(sim, {"primary": bad, "rescue": ok}, primary={"fallback_lanes": ["rescue"]})
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamRejected):
            await lw.chat("primary", HELLO)
    assert await count(sim, ok) == 0


@in_virtual_time
async def test_the_chain_ends_by_the_callers_deadline(vsim: VirtualSim) -> None:
    slow, slower = unique_spec("sleep=5"), unique_spec("sleep=5")
    config = lanes(
        vsim,
        {"primary": slow, "rescue": slower},
        primary={"deadline": "600ms", "fallback_lanes": ["rescue"]},
        rescue={"deadline": "5s"},
    )
    async with vsim.laneway(config) as lw:
        started = vsim.clock.now()
        with pytest.raises(DeadlineExceeded) as failed:
            await lw.chat("primary", HELLO, deadline=1.2)
        elapsed = vsim.clock.now() - started
    assert elapsed == pytest.approx(1.2)
    assert [a.source for a in failed.value.attempts] == [
        "primary/openai:sim-model",
        "rescue/openai:sim-model",
    ]
    assert [a.elapsed for a in failed.value.attempts] == [pytest.approx(0.6)] * 2


async def test_embed_lanes_fall_back_too(sim: RunningSim) -> None:
    down, ok = unique_spec("status=503"), unique_spec("ok")
    embed = {"kind": "embed"}
    config = lanes(
        sim,
        {"primary": down, "rescue": ok},
        primary={**embed, "fallback_lanes": ["rescue"]},
        rescue=embed,
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        answer = await lw.embed("primary", ["a", "b"])
    assert answer.lane == "rescue" and len(answer.vectors) == 2


SOURCES = "sources: [{base_url: 'http://127.0.0.1:1/v1', model: m}]"
BASE = f"""
lanes:
  a: {{client_deadline: 30s, deadline: 28s, fallback_lanes: [b], {SOURCES}}}
  b: {{deadline: 20s, fallback_lanes: [c], {SOURCES}}}
  c: {{deadline: 5s, {SOURCES}}}
  e: {{kind: embed, {SOURCES}}}
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("fallback_lanes: [c]", "fallback_lanes: [x]", "names unknown lane 'x'"),
        ("fallback_lanes: [c]", "fallback_lanes: [e]", "e is of kind embed, not chat"),
        ("fallback_lanes: [c]", "fallback_lanes: [b]", "a lane cannot fall back to itself"),
    ],
)
def test_fallback_lanes_are_checked(old: str, new: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(BASE.replace(old, new))


def test_the_chain_goes_depth_first_and_never_twice() -> None:
    config = parse_config(BASE.replace("fallback_lanes: [c]", "fallback_lanes: [c, a]"))
    assert config.fallback_chain("a") == ["a", "b", "c"]
    assert config.fallback_chain("b") == ["b", "c", "a"]


def test_check_prints_the_chain_and_its_worst_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(BASE)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "fallback a (28s) -> b (20s) -> c (5s): worst case 53s" in out
    assert "fallback b (20s) -> c (5s): worst case 25s" in out
    assert (
        "warning: a: the fallback chain's worst case 53s is longer than client_deadline 30s: "
        "the caller's deadline cuts the chain"
    ) in out


STREAMED = f"""
lanes:
  a: {{deadline: 10s, attempt_timeout: 2s, fallback_lanes: [b], {SOURCES}}}
  b: {{deadline: 5s, {SOURCES}}}
"""


@pytest.mark.parametrize(
    ("extra", "streamed"),
    [("", "10s"), ("continue_on_cut: restart, ", "15s")],
)
def test_check_prints_a_streamed_worst_case_where_it_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, streamed: str
) -> None:
    """A stream hands over only before its first token: once content flows, a lane may run to
    its deadline, and under restart the next lane may resume it for its own."""
    path = tmp_path / "laneway.yaml"
    path.write_text(STREAMED.replace("fallback_lanes", extra + "fallback_lanes"))
    assert main(["check", str(path)]) == 0
    assert (
        f"fallback a (2s) -> b (5s): worst case 7s; streamed {streamed}" in capsys.readouterr().out
    )


def test_check_says_which_lane_serves_a_lane_that_is_not_ready(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keyed = SOURCES.replace("model: m", "model: m, api_key: os.environ/LANEWAY_TEST_NO_SUCH_KEY")
    path = tmp_path / "laneway.yaml"
    path.write_text(
        BASE.replace(f"fallback_lanes: [b], {SOURCES}", f"fallback_lanes: [b], {keyed}")
    )
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not ready a: its calls go to fallback lane b" in out
    assert "LANEWAY_TEST_NO_SUCH_KEY" in out
