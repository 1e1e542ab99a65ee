"""The command's edges: its version, a reader that goes away, help texts without reST."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from laneway.cli.demo import demo_examples, runners
from laneway.cli.main import BROKEN_PIPE, main, version
from laneway.cli.serve import stamped

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO laneway.serve: ")
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


def test_the_demo_prints_commands_that_run_from_the_shell_that_started_it() -> None:
    """Under ``uv run`` the checkout's venv is not on the shell's PATH: ``uv run`` forms."""
    assert runners({"UV": "/usr/bin/uv", "PATH": "/usr/bin"}) == ("uv run python", "uv run laneway")
    python, laneway = runners({"PATH": "/usr/bin:/bin"})
    assert python == sys.executable and laneway == f"{sys.executable} -m laneway"
    plain = {"PATH": f"{Path(sys.executable).parent}:/usr/bin"}
    assert runners(plain) == ("python", "laneway")
    text = demo_examples("http://127.0.0.1:1", Path("/tmp/d/laneway.yaml"), {"PATH": "/bin"})
    done = subprocess.run(
        ["bash", "-c", f"{laneway} --version"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and f"  {laneway} spend --config /tmp/d/laneway.yaml" in text


def test_every_banner_line_starts_with_its_time_except_the_commands_to_paste() -> None:
    text = stamped("laneway serve: http://x/v1\n  chat  chat  ready\ntry:\n  curl -s x\nready; go")
    lines = text.splitlines()
    assert [bool(STAMP.match(line)) for line in lines] == [True, True, True, False, True]
    assert lines[1].endswith("laneway.serve:   chat  chat  ready") and lines[3] == "  curl -s x"
