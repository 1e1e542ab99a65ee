"""Config validation knows what each wire format can serve."""

from __future__ import annotations

import pytest

from laneway.config.load import parse_config
from laneway.core.errors import ConfigError

LANE = """
lanes:
  lane:
    kind: {kind}
    sources:
      - provider: {provider}
        base_url: http://127.0.0.1:1/v1
        model: m
{extra}"""


def parse(kind: str, provider: str, extra: str = "") -> None:
    parse_config(LANE.format(kind=kind, provider=provider, extra=extra))


@pytest.mark.parametrize(
    ("kind", "provider", "extra", "message"),
    [
        (
            "embed",
            "anthropic",
            "        max_tokens: 100\n",
            "anthropic sources serve chat and ocr lanes only",
        ),
        ("chat", "openai", '        api_version: "2024-10-21"\n', "api_version applies to azure"),
        ("chat", "azure", "        api_version: latest\n", "api_version"),
        ("chat", "anthropic", "", "max_tokens is required on anthropic sources"),
        ("chat", "openai", "        max_tokens: 100\n", "max_tokens applies to anthropic sources"),
    ],
)
def test_invalid_combinations_are_config_errors(kind, provider, extra, message) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(kind, provider, extra)


@pytest.mark.parametrize(
    ("kind", "provider", "extra"),
    [
        ("chat", "anthropic", "        max_tokens: 100\n"),
        ("embed", "gemini", ""),
        ("chat", "gemini", ""),
        ("ocr", "gemini", ""),
        ("ocr", "anthropic", "        max_tokens: 100\n"),
        ("chat", "azure", '        api_version: "2024-10-21"\n'),
        ("embed", "azure", "        api_version: v1\n"),
    ],
)
def test_valid_combinations(kind, provider, extra) -> None:
    parse(kind, provider, extra)
