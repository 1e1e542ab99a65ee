"""A lane parses to its kind's class, and a field of another kind is refused by name.

``LaneConfig`` is a union by ``kind`` (``config.lanes``); before it, one class
held every kind's fields and validators refused them field by field. These
pin what the union must keep: ``kind`` left out is chat, the refusal names
the field, the kinds it applies to, and its line, and the lanes ``laneway
import litellm`` writes load as their kinds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from laneway.cli.main import main
from laneway.config import load_config, parse_config
from laneway.config.models import ChatLaneConfig, EmbedLaneConfig, OcrLaneConfig
from laneway.core.errors import ConfigError

SOURCE = "    sources: [{base_url: 'http://127.0.0.1:9/v1', model: m}]\n"


def lane(name: str, *lines: str) -> str:
    return f"  {name}:\n" + "".join(f"    {line}\n" for line in lines) + SOURCE


def refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, origin="laneway.yaml")
    return str(caught.value)


def test_each_kind_parses_to_its_class_and_no_kind_is_chat() -> None:
    text = "lanes:\n" + "".join(
        [
            lane("plain", "first_byte_timeout: 2s"),
            lane("talk", "kind: chat", "cache: {ttl: 1m}"),
            lane("vectors", "kind: embed", "dimensions: 256", "max_inputs: 10"),
            lane("scan", "kind: ocr", "prompt: Read it"),
        ]
    )
    lanes = parse_config(text).lanes
    plain, talk = lanes["plain"], lanes["talk"]
    assert isinstance(plain, ChatLaneConfig) and plain.first_byte_timeout == 2.0
    assert isinstance(talk, ChatLaneConfig) and talk.cache is not None
    vectors, scan = lanes["vectors"], lanes["scan"]
    assert isinstance(vectors, EmbedLaneConfig) and vectors.dimensions == 256
    assert vectors.max_inputs == 10
    assert isinstance(scan, OcrLaneConfig) and scan.prompt == "Read it"
    assert [lanes[n].kind for n in lanes] == ["chat", "chat", "embed", "ocr"]


@pytest.mark.parametrize(
    ("lines", "where", "message"),
    [
        (["max_inputs: 10"], "4: lanes.a.max_inputs", "max_inputs applies to embed lanes only"),
        (
            ["kind: embed", "cache: {ttl: 1m}"],
            "5: lanes.a.cache",
            "cache applies to chat and ocr lanes only; this lane is embed",
        ),
        (
            ["kind: ocr", "fallback_lanes: [b]"],
            "5: lanes.a.fallback_lanes",
            "fallback_lanes applies to chat and embed lanes only; this lane is ocr",
        ),
        (["kind: ocr", "idle_timeout: 3s"], "5: lanes.a.idle_timeout", "chat lanes only"),
        (["kind: embed", "continue_on_cut: true"], "5: lanes.a.continue_on_cut", "chat lanes"),
        (
            ["dimensions: 8"],
            "4: lanes.a.dimensions",
            "dimensions applies to embed lanes only; this lane gives no kind, so it is chat "
            "(set kind: embed)",
        ),
        (["prompt: Read"], "4: lanes.a.prompt", "prompt applies to ocr lanes only"),
    ],
)
def test_a_field_of_another_kind_is_refused_at_its_line_naming_the_kinds(
    lines: list[str], where: str, message: str
) -> None:
    text = "lanes:\n" + lane("a", "deadline: 9s", *lines) + lane("b", "kind: embed")
    assert f"laneway.yaml:{where}: " in refusal(text)
    assert message in refusal(text)


def test_an_unknown_kind_and_an_unknown_key_say_so_at_their_lines() -> None:
    assert "laneway.yaml:3: lanes.a.kind: 'image' is not a lane kind: chat, embed, ocr" in refusal(
        "lanes:\n" + lane("a", "kind: image")
    )
    typo = refusal("lanes:\n" + lane("a", "kind: embedd"))
    assert (
        "lanes.a.kind: 'embedd' is not a lane kind: chat, embed, ocr (did you mean embed?)" in typo
    )
    near = refusal("lanes:\n" + lane("a", "kind: embed", "max_input: 3"))
    assert "laneway.yaml:4: lanes.a.max_input: unknown key (did you mean max_inputs?)" in near


def test_a_lane_named_as_a_kind_keeps_its_name_in_the_error() -> None:
    """pydantic puts the union's tag in an error's place; it is dropped by position, so a
    lane called ``chat`` or ``embed`` is still named."""
    text = "lanes:\n" + lane("chat", "retries: 1", "retry_on: [400]")
    assert "laneway.yaml:4: lanes.chat.retry_on: 400 is a rejection" in refusal(text)
    text = "lanes:\n" + lane("embed", "kind: embed", "prompt: x")
    assert "laneway.yaml:4: lanes.embed.prompt: prompt applies to ocr lanes only" in refusal(text)


def test_the_lanes_laneway_import_litellm_writes_load_as_their_kinds(tmp_path: Path) -> None:
    litellm = {
        "model_list": [
            {
                "model_name": "talk",
                "litellm_params": {"model": "openai/gpt-4o", "stream_timeout": 5},
            },
            {"model_name": "talk-b", "litellm_params": {"model": "openai/gpt-4o-mini"}},
            {"model_name": "vec", "litellm_params": {"model": "openai/text-embedding-3-small"}},
            {"model_name": "vec-b", "litellm_params": {"model": "openai/text-embedding-3-large"}},
        ],
        "router_settings": {"fallbacks": [{"talk": ["talk-b"]}, {"vec": ["vec-b"]}]},
        "litellm_settings": {"cache": True},
    }
    source, output = tmp_path / "config.yaml", tmp_path / "laneway.yaml"
    source.write_text(yaml.safe_dump(litellm))
    assert main(["import", "litellm", str(source), "-o", str(output)]) == 0
    lanes = load_config(output)[0].lanes
    talk, vec = lanes["talk"], lanes["vec"]
    assert isinstance(talk, ChatLaneConfig) and talk.first_byte_timeout == 5.0
    assert talk.fallback_lanes == ["talk-b"] and talk.cache is not None
    assert isinstance(vec, EmbedLaneConfig) and vec.dimensions == 1536
    assert vec.fallback_lanes == ["vec-b"] and vec.embed_cache
