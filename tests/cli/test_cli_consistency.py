"""The commands' first five minutes: config flags, readable errors, OCR probes, missing drivers."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from laneway.cli.main import main
from laneway.core.errors import ConfigError
from laneway.core.extras import require
from laneway.sim import RunningSim
from tests.helpers import sim_url

LANE = "lanes:\n  a:\n    sources:\n      - {base_url: 'http://127.0.0.1:9/v1', model: m}\n"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "laneway.yaml"
    path.write_text(LANE)
    return path


@pytest.mark.parametrize("form", [["--config"], []])
def test_check_takes_the_config_as_a_flag_or_a_path(
    config: Path, form: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", *form, str(config)]) == 0
    assert "1 lane(s)" in capsys.readouterr().out


def test_a_yaml_syntax_error_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("lanes:\n  a:\n    sources: [\n  b: 1\n")
    assert main(["check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:5: not valid YAML" in err
    assert "that began on line 3" in err


def test_serve_without_a_config_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve"]) == 1
    err = capsys.readouterr().err
    assert "no laneway.yaml in this folder" in err
    assert "laneway serve --demo" in err and "examples/laneway.yaml" in err


def test_serve_on_a_port_in_use_names_the_port_and_the_flag(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--config", str(config), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use: choose another with --port" in err


def test_probe_reads_an_image_on_an_ocr_lane(
    sim: RunningSim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  read:\n    kind: ocr\n    sources:\n"
        f"      - {{base_url: '{sim_url(sim, 'ok')}', model: m}}\n"
    )
    assert main(["probe", "read", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "probe: lane read (ocr)" in out
    assert "/chat/completions -> HTTP 200" in out


def test_a_driver_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    require("redis", "state.url (Redis)")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install 'laneway\[postgres\]'"):
        require("asyncpg", "telemetry.url (PostgreSQL)")
