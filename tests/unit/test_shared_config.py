"""laneway.yaml's shared parts: aliases, deployments referenced by lanes, quota groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.cli.main import main
from laneway.config import parse_config
from laneway.core.errors import ConfigError, UnknownLane
from laneway.engine.gateway import Engine
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
    engine = Engine(config, {}, AiohttpTransport())
    assert engine.lane("gpt-4o", "chat").name == "summarize"
    with pytest.raises(UnknownLane, match=r"lanes: embed, summarize; aliases: gpt-4o -> summarize"):
        engine.lane("gpt-5")
    await engine.aclose()


def test_check_lists_aliases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(TWO_LANES + "aliases: {gpt-4o: summarize}\n")
    assert main(["check", str(path)]) == 0
    assert "alias gpt-4o -> summarize (chat)" in capsys.readouterr().out
