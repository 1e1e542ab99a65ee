"""``python -m laneway`` is the ``laneway`` command: same parser, same exit statuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def python_m_laneway(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m laneway args`` in a fresh interpreter."""
    command = [sys.executable, "-m", "laneway", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


def test_it_checks_a_config_and_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  summarize:\n    sources:\n"
        "      - base_url: http://127.0.0.1:9/v1\n        model: m\n"
    )
    done = python_m_laneway("check", str(path))
    assert done.returncode == 0, done.stderr
    assert "summarize" in done.stdout
    assert "1 lane(s)" in done.stdout


def test_a_bad_config_exits_one_naming_the_error(tmp_path: Path) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text("lanes: 3\n")
    done = python_m_laneway("check", str(path))
    assert done.returncode == 1
    assert done.stderr.startswith("error:")


def test_without_a_command_it_prints_the_help_as_laneway() -> None:
    done = python_m_laneway()
    assert done.returncode == 2
    assert done.stdout.startswith("usage: laneway ")
