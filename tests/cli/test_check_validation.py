"""`laneway check` validates URLs, ports and variables; `serve` refuses the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.cli import serve
from laneway.cli.main import main

SOURCE = "{base_url: 'http://127.0.0.1:1/v1', model: m}"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "laneway.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("extra", "where", "why"),
    [
        ("state: {url: 'redis://127.0.0.1:99999'}", "state.url", "port must be a number"),
        ("state: {url: 'redis://:6379'}", "state.url", "names no host"),
        ("telemetry: {url: 'postgresql://db:0/x'}", "telemetry.url", "port must be"),
        ("cache: {url: 'redis://cache:port'}", "cache.url", "port must be"),
        ("server: {port: 70000}", "server.port", "less than or equal to 65535"),
    ],
)
def test_bad_urls_and_ports_fail_check_and_serve_alike(tmp_path, capsys, extra, where, why) -> None:
    path = write(tmp_path, f"lanes:\n  a:\n    sources: [{SOURCE}]\n{extra}\n")
    assert main(["check", path]) == 1
    checked = capsys.readouterr().err
    assert where in checked and why in checked
    assert serve.main(["--config", path, "--port", "0"]) == 1
    assert capsys.readouterr().err == checked


@pytest.mark.parametrize(
    "base_url", ["ftp://127.0.0.1/v1", "127.0.0.1:8000/v1", "http://127.0.0.1:0/v1", "http:///v1"]
)
def test_a_source_base_url_must_be_http_with_host_and_port(tmp_path, capsys, base_url) -> None:
    path = write(tmp_path, f"lanes:\n  a:\n    sources: [{{base_url: '{base_url}', model: m}}]\n")
    assert main(["check", path]) == 1
    assert "lanes.a.sources[0].base_url" in capsys.readouterr().err


def test_every_unset_variable_is_named(tmp_path, capsys, monkeypatch) -> None:
    """A source's unset key is named even when its lane runs on another source."""
    monkeypatch.delenv("LANEWAY_TEST_UNSET_SOURCE", raising=False)
    monkeypatch.delenv("LANEWAY_TEST_UNSET_SERVER", raising=False)
    text = (
        "lanes:\n  a:\n    sources:\n"
        "      - {base_url: 'http://127.0.0.1:1/v1', model: m, "
        "api_key: os.environ/LANEWAY_TEST_UNSET_SOURCE}\n"
        f"      - {SOURCE}\n"
        "server:\n  keys: [{name: ops, key: '${LANEWAY_TEST_UNSET_SERVER}'}]\n"
    )
    path = write(tmp_path, text)
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    assert "a: source openai:m: environment variable LANEWAY_TEST_UNSET_SOURCE is unset" in out
    assert "server.keys: key ops: environment variable LANEWAY_TEST_UNSET_SERVER" in out
    assert "2 warning(s)" in out
    assert main(["check", "--strict", path]) == 1
