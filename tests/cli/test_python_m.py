"""``python -m laneway`` is the ``laneway`` command: same parser, same exit statuses.

One run is a fresh interpreter (``-m`` from the command line, the exit
status as the shell sees it); the others run the same ``__main__`` module
here as ``-m`` does (``runpy``), and read the status it exits with.
"""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest


def python_m_laneway(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m laneway args`` in a fresh interpreter."""
    command = [sys.executable, "-m", "laneway", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


def exit_status_of_m_laneway(monkeypatch: pytest.MonkeyPatch, *args: str) -> object:
    """Run ``laneway/__main__.py`` as ``python -m laneway args`` would; its exit status."""
    monkeypatch.setattr(sys, "argv", ["laneway", *args])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("laneway", run_name="__main__", alter_sys=True)
    return exited.value.code


def test_it_checks_a_config_and_exits_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  summarize:\n    sources:\n"
        "      - base_url: http://127.0.0.1:9/v1\n        model: m\n"
    )
    status = exit_status_of_m_laneway(monkeypatch, "check", str(path))
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "summarize" in out
    assert "1 lane(s)" in out


def test_a_bad_config_exits_one_naming_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text("lanes: 3\n")
    assert exit_status_of_m_laneway(monkeypatch, "check", str(path)) == 1
    assert capsys.readouterr().err.startswith("error:")


def test_without_a_command_it_prints_the_help_as_laneway() -> None:
    done = python_m_laneway()
    assert done.returncode == 2
    assert done.stdout.startswith("usage: laneway ")
