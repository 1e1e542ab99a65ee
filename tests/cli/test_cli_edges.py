"""The command's edges: its version, a reader that goes away, help texts without reST."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from laneway.cli.main import BROKEN_PIPE, main, version

COMMANDS = ["spend", "keys", "size", "probe", "reload", "batch", "import", "check", "serve"]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"laneway {version()}\n"
    assert main(["-V"]) == 0


def test_a_reader_that_went_away_ends_quietly_without_a_traceback(tmp_path: Path) -> None:
    """``laneway spend --json | head``: stdout's reader closed before the command wrote."""
    config = tmp_path / "laneway.yaml"
    config.write_text(
        "lanes:\n  chat:\n    sources:\n      - base_url: http://127.0.0.1:9/v1\n        model: m\n"
    )
    read_end, write_end = os.pipe()
    os.close(read_end)
    done = subprocess.run(
        [sys.executable, "-m", "laneway", "check", str(config)],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        timeout=60,
    )
    os.close(write_end)
    assert done.stderr == "" and done.returncode == BROKEN_PIPE


@pytest.mark.parametrize("command", COMMANDS)
def test_help_texts_show_no_rest_markup(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: laneway") and "``" not in out
