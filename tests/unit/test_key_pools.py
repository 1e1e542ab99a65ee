"""Several keys for one provider: each a deployment of its own, and `.env.example`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from laneway.app import build_lanes, pooled_keys
from laneway.cli.main import main
from laneway.config import parse_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.errors import DeadlineExceeded
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

POOLED = """
deployments:
  openrouter:
    base_url: https://openrouter.ai/api/v1
    model: qwen/qwen3-32b
    api_key: os.environ/OPENROUTER_API_KEY
    each_key: true
    rpm: 10
lanes:
  summarize: {sources: [{deployment: openrouter}]}
  scout: {sources: [{deployment: openrouter}]}
"""


@pytest.mark.parametrize(
    ("environ", "keys"),
    [
        ({"K": "a"}, ["a"]),
        ({"K": "a", "K_2": "b", "K_3": "c", "K_5": "e"}, ["a", "b", "c"]),
        ({"K": "a, b,,c"}, ["a", "b", "c"]),
        ({"K": "a,b", "K_2": "c"}, ["a", "b", "c"]),
        ({}, []),
    ],
)
def test_pooled_keys(environ: dict[str, str], keys: list[str]) -> None:
    assert pooled_keys("K", environ) == keys


def test_each_key_is_a_deployment_of_its_own_in_every_lane() -> None:
    environ = {
        "OPENROUTER_API_KEY": "k1",
        "OPENROUTER_API_KEY_2": "k2",
        "OPENROUTER_API_KEY_3": "k3",
    }
    lanes = build_lanes(parse_config(POOLED), environ)
    summarize, scout = lanes["summarize"], lanes["scout"]
    assert summarize.source_names == ("openrouter", "openrouter/key2", "openrouter/key3")
    keys = [s.key for s in summarize.sources]
    assert keys == [s.key for s in scout.sources]
    assert keys == [
        "deployment:openrouter",
        "deployment:openrouter/key2",
        "deployment:openrouter/key3",
    ]
    assert [s.quota_key for s in summarize.sources] == keys
    assert all(s.quota is not None and s.quota.rpm == 10 for s in summarize.sources)


def test_no_key_set_leaves_one_source_not_ready() -> None:
    lane = build_lanes(parse_config(POOLED), {})["summarize"]
    assert lane.problems == ["source openrouter: environment variable OPENROUTER_API_KEY is unset"]


def test_each_key_needs_a_variable() -> None:
    with pytest.raises(ConfigError, match=r"each_key needs api_key: os\.environ/NAME"):
        parse_config(POOLED.replace("os.environ/OPENROUTER_API_KEY", "sk-literal"))


@in_virtual_time
async def test_two_keys_carry_twice_one_keys_rpm(vsim: VirtualSim) -> None:
    spec = unique_spec("ok")
    deployment = {
        "base_url": sim_url(vsim, spec),
        "model": "sim-model",
        "api_key": "os.environ/SIM_KEY",
        "each_key": True,
        "rpm": 2,
    }
    config = LanewayConfig.model_validate(
        {
            "deployments": {"sim": deployment},
            "lanes": {"lane": {"deadline": "1500ms", "sources": [{"deployment": "sim"}]}},
        }
    )
    hello = [{"role": "user", "content": "hello"}]
    async with vsim.laneway(config, environ={"SIM_KEY": "a,b"}) as lw:
        results = await asyncio.gather(
            *(lw.chat("lane", hello) for _ in range(5)), return_exceptions=True
        )
    assert sum(not isinstance(r, BaseException) for r in results) == 4
    assert sum(isinstance(r, DeadlineExceeded) for r in results) == 1
    assert vsim.hits(spec) == 4


def test_check_writes_env_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        POOLED + "  local: {sources: [{base_url: 'http://127.0.0.1:1/v1', model: m, "
        "api_key: '${LOCAL_KEY}'}]}\n"
        + "server: {keys: [{name: ci, key: os.environ/CI_CALLER_KEY}]}\n"
    )
    main(["check", "--env-example", str(path)])
    assert f"wrote {tmp_path / '.env.example'}" in capsys.readouterr().out
    assert (tmp_path / ".env.example").read_text().splitlines()[2:] == [
        "",
        "# deployments.openrouter",
        "# each_key: more keys as OPENROUTER_API_KEY_2, OPENROUTER_API_KEY_3, ... or a comma list",
        "OPENROUTER_API_KEY=",
        "",
        "# lanes.local source openai:m",
        "LOCAL_KEY=",
        "",
        "# server.keys ci",
        "CI_CALLER_KEY=",
    ]
