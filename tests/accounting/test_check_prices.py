"""`laneway check` names every unpriced source; `require_price` makes it an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.cli.main import main
from laneway.config import parse_config
from laneway.core.errors import ConfigError


def write(tmp_path: Path, source: str, lane: str = "") -> str:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        f"lanes:\n  x:\n{lane}    sources: [{{base_url: 'http://127.0.0.1:1/v1', {source}}}]\n"
    )
    return str(path)


def test_unpriced_source_is_listed(tmp_path, capsys) -> None:
    assert main(["check", write(tmp_path, "model: sim-model")]) == 0
    assert "price x/openai:sim-model: UNPRICED" in capsys.readouterr().out


def test_catalogue_and_own_prices_are_shown(tmp_path, capsys) -> None:
    main(["check", write(tmp_path, "model: gpt-4o")])
    assert "input 2.5, output 10, cached 1.25 USD/Mtok from genai-prices openai/gpt-4o" in (
        capsys.readouterr().out
    )
    main(["check", write(tmp_path, "model: m, price: {input: 1, output: 3}")])
    assert "input 1, output 3 USD/Mtok from price override" in capsys.readouterr().out


def test_require_price_makes_an_unpriced_source_an_error(tmp_path, capsys) -> None:
    assert main(["check", write(tmp_path, "model: sim-model", "    require_price: true\n")]) == 1
    assert "x: require_price is set but source openai:sim-model has no price" in (
        capsys.readouterr().err
    )
    priced = write(tmp_path, "model: m, price: {input: 1, output: 3}", "    require_price: true\n")
    assert main(["check", priced]) == 0


def test_chat_price_needs_an_output_price() -> None:
    text = "lanes:\n  x:\n    sources: [{base_url: 'http://h/v1', model: m, price: {input: 1}}]\n"
    with pytest.raises(ConfigError, match=r"price\.output is required on chat lanes"):
        parse_config(text)
    assert parse_config(text.replace("x:\n", "x:\n    kind: embed\n")).lanes["x"].kind == "embed"


@pytest.mark.parametrize(
    ("written", "read"), [("false", "none"), ("none", "none"), ("a.db", "a.db")]
)
def test_telemetry_url_forms(written: str, read: str) -> None:
    source = "{base_url: 'http://h/v1', model: m}"
    text = f"telemetry: {{url: {written}}}\nlanes:\n  x:\n    sources: [{source}]\n"
    assert parse_config(text).telemetry.url == read
