"""Config errors read ``file:line: field: plain message (did you mean X?)``, each said once.

Before: cross-references lost their line ("(top level): unknown deployment
'healthyy'"), unknown keys had no suggestion, a deployment's bad base_url was
repeated at every lane naming it, and pydantic's wording ("String should match
pattern") was shown.
"""

from __future__ import annotations

import pytest

from laneway.config import parse_config
from laneway.core.errors import ConfigError

SOURCE = "{base_url: 'http://127.0.0.1:1/v1', model: m}"


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        parse_config(text, origin="laneway.yaml")
    return str(raised.value).splitlines()[1:]


def test_a_cross_reference_names_its_line_and_the_nearest_name() -> None:
    text = (
        "deployments:\n  healthy: {base_url: 'http://127.0.0.1:1/v1', model: m}\n"
        "lanes:\n  a:\n    sources:\n      - {deployment: healthyy}\n"
    )
    assert errors(text) == [
        "  laneway.yaml:6: lanes.a.sources[0].deployment: names unknown deployment 'healthyy'"
        " (did you mean healthy?)"
    ]


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (
            "    fallback_lanes: [rescue]\n  rescuer:\n    sources: [" + SOURCE + "]\n",
            "laneway.yaml:4: lanes.summarize.fallback_lanes[0]: names unknown lane 'rescue'"
            " (did you mean rescuer?)",
        ),
        (
            "aliases: {gpt: sumarize}\n",
            "laneway.yaml:4: aliases.gpt: names unknown lane 'sumarize' (did you mean summarize?)",
        ),
        (
            "server: {keys: [{name: k, key: x, lanes: [sumarize]}]}\n",
            "laneway.yaml:4: server.keys[0].lanes[0]: key k names unknown lane 'sumarize'"
            " (did you mean summarize?)",
        ),
    ],
)
def test_each_cross_reference_has_a_line(tail: str, expected: str) -> None:
    lines = errors("lanes:\n  summarize:\n    sources: [" + SOURCE + "]\n" + tail)
    assert [line.strip() for line in lines] == [expected]


def test_unknown_keys_get_the_nearest_key_or_laneways_name_for_litellms() -> None:
    text = (
        "lanes:\n  a:\n    retires: 2\n    sources:\n"
        "      - {api_base: 'http://127.0.0.1:1/v1', model: m}\n"
    )
    assert sorted(errors(text)) == [
        "  laneway.yaml:3: lanes.a.retires: unknown key (did you mean retries?)",
        "  laneway.yaml:5: lanes.a.sources[0].api_base: unknown key"
        " (did you mean base_url? api_base is LiteLLM's name)",
        "  laneway.yaml:5: lanes.a.sources[0].base_url: required, and not given",
    ]


def test_a_deployments_error_is_said_once_at_the_deployment() -> None:
    text = (
        "deployments:\n  d: {base_url: 'ftp://127.0.0.1/v1', model: m}\n"
        "lanes:\n"
        "  a:\n    sources: [{deployment: d}]\n"
        "  b:\n    sources: [{deployment: d}]\n"
    )
    assert errors(text) == [
        "  laneway.yaml:2: deployments.d.base_url: must be an http:// or https:// URL"
    ]


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("state: {url: 'http://127.0.0.1:6379'}", "must be a redis://, rediss:// or unix:// URL"),
        ("telemetry: [none]", "must be a mapping (key: value)"),
        ("server: {port: many}", "must be a whole number"),
        ("server: {port: -1}", "must be greater than or equal to 0"),
    ],
)
def test_no_raw_pydantic_wording(setting: str, expected: str) -> None:
    (line,) = errors("lanes:\n  a:\n    sources: [" + SOURCE + "]\n" + setting + "\n")
    assert line.endswith(expected)
    assert "should" not in line and "Input" not in line


def test_a_deployments_own_rule_is_said_once_at_the_deployment() -> None:
    text = (
        "deployments:\n  d: {base_url: 'http://127.0.0.1:1/v1', model: m, max_tokens: 5}\n"
        "lanes:\n"
        "  a:\n    sources: [{deployment: d}]\n"
        "  b:\n    sources: [{deployment: d}]\n"
    )
    assert errors(text) == [
        "  laneway.yaml:2: deployments.d: max_tokens applies to anthropic sources only"
    ]
