"""laneway.yaml's shared parts: aliases, deployments referenced by lanes, quota groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.app import build_engine, build_lanes
from laneway.cli.main import main
from laneway.config import parse_config
from laneway.core.errors import ConfigError, UnknownLane
from laneway.http import AiohttpTransport

TWO_LANES = """
lanes:
  summarize:
    sources: [{base_url: 'http://127.0.0.1:1/v1', model: m}]
  embed:
    kind: embed
    sources: [{base_url: 'http://127.0.0.1:1/v1', model: e}]
"""


def test_aliases_reach_their_lanes() -> None:
    config = parse_config(TWO_LANES + "aliases: {gpt-4o: summarize, text-embedding-3: embed}\n")
    assert config.lane_of("gpt-4o") == "summarize"
    assert config.lane_of("summarize") == "summarize"
    assert config.lane_of("other") == "other"


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ("{gpt-4o: nope}", "aliases.gpt-4o: names unknown lane 'nope'"),
        ("{embed: summarize}", "aliases.embed: a lane already has this name"),
    ],
)
def test_aliases_must_name_lanes_and_not_shadow_them(aliases: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(TWO_LANES + f"aliases: {aliases}\n")


async def test_engine_resolves_aliases_and_names_them_when_unknown() -> None:
    config = parse_config(TWO_LANES + "aliases: {gpt-4o: summarize}\n")
    engine = build_engine(config, {}, transport=AiohttpTransport())
    assert engine.lane("gpt-4o", "chat").name == "summarize"
    with pytest.raises(UnknownLane, match=r"lanes: embed, summarize; aliases: gpt-4o -> summarize"):
        engine.lane("gpt-5")
    await engine.aclose()


def test_check_lists_aliases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(TWO_LANES + "aliases: {gpt-4o: summarize}\n")
    assert main(["check", str(path)]) == 0
    assert "alias gpt-4o -> summarize (chat)" in capsys.readouterr().out


DEPLOYMENTS = """
quota_groups:
  openrouter-account: {rpm: 600, tpm: 1000000}
deployments:
  openrouter-main:
    base_url: https://openrouter.ai/api/v1
    model: qwen/qwen3-32b
    api_key: os.environ/OPENROUTER_API_KEY
    rpm: 60
    context_window: 32768
    breaker: {failures: 3, window: 20s, cooldown: 5s}
    price: {input: 0.1, output: 0.3}
  openrouter-small:
    base_url: https://openrouter.ai/api/v1
    model: qwen/qwen3-8b
    quota_group: openrouter-account
lanes:
  summarize:
    sources:
      - {deployment: openrouter-main, priority: 0}
      - {deployment: openrouter-small, priority: 1, name: small}
  scout:
    sources:
      - {deployment: openrouter-main}
      - {base_url: 'http://127.0.0.1:1/v1', model: local, priority: 1}
"""


def test_a_lane_source_naming_a_deployment_takes_its_fields() -> None:
    config = parse_config(DEPLOYMENTS)
    main_source, small = config.lanes["summarize"].sources
    assert main_source.deployment == "openrouter-main" and main_source.name == "openrouter-main"
    assert main_source.model == "qwen/qwen3-32b" and main_source.rpm == 60
    assert main_source.context_window == 32768 and main_source.breaker is not None
    assert main_source.price is not None and main_source.price.output == 0.3
    assert main_source.api_key is not None and main_source.api_key.env == "OPENROUTER_API_KEY"
    assert (small.name, small.priority, small.quota_group) == ("small", 1, "openrouter-account")
    inline = config.lanes["scout"].sources[1]
    assert inline.deployment is None and inline.model == "local"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("{deployment: openrouter-main}", "{deployment: nope}", 1), "names unknown deployment"),
        (
            ("{deployment: openrouter-main}", "{deployment: openrouter-main, rpm: 5}", 1),
            "rpm belong(s) to deployment 'openrouter-main'",
        ),
        (("quota_group: openrouter-account", "quota_group: other", 1), "unknown quota group"),
        (
            ("    rpm: 60\n", "    rpm: 60\n    quota_group: openrouter-account\n", 1),
            "set them there",
        ),
        (("{rpm: 600, tpm: 1000000}", "{}", 1), "a quota group needs rpm or tpm"),
    ],
)
def test_deployment_errors_name_what_is_wrong(change: tuple[str, str, int], message: str) -> None:
    old, new, count = change
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_config(DEPLOYMENTS.replace(old, new, count))


def test_lanes_naming_a_deployment_share_its_state_keys() -> None:
    lanes = build_lanes(parse_config(DEPLOYMENTS), {})
    summarize, scout = lanes["summarize"], lanes["scout"]
    assert summarize.scope == scout.scope == "deployments"
    assert summarize.sources[0].key == scout.sources[0].key == "deployment:openrouter-main"
    assert summarize.sources[1].quota_key == "quota-group:openrouter-account"
    assert summarize.sources[1].quota is not None and summarize.sources[1].quota.rpm == 600
    assert scout.sources[1].key == "lane:scout/openai:local"
    assert summarize.memory.pacers is scout.memory.pacers
    assert summarize.memory.turns is not scout.memory.turns
    assert summarize.sources[0].breaker is not None and summarize.sources[0].breaker.failures == 3


def test_check_lists_deployments_and_quota_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(DEPLOYMENTS)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "deployment openrouter-main: qwen/qwen3-32b, lanes summarize, scout; rpm 60" in out
    assert (
        "deployment openrouter-small: qwen/qwen3-8b, lanes summarize; no quota, "
        "quota group openrouter-account"
    ) in out
    assert "quota group openrouter-account: rpm 600 tpm 1000000 shared by openrouter-small" in out
