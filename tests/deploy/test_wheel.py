"""The built wheel, installed alone in a clean venv: ``laneway serve --demo`` and its commands work.

This is the first five minutes of a user who ran ``pip install laneway``: no
dev tools, no repository. The wheel is built from this checkout, installed
with its locked-range dependencies from the package index (no extras), and
every command the demo prints is run exactly as printed, with the venv first
on ``PATH`` (the SDK line after ``pip install openai``, as the demo says): the
calls side by side, and ``laneway spend`` once the chat lane's telemetry is
written, while the slow lane is still waiting out its 2.5 s deadline.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

from tests.server.test_serve_cli import read_banner

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 180) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel of this checkout and its dependencies, nothing else."""
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv, "uv builds the wheel (the test command runs under uv)"
    where = tmp_path_factory.mktemp("wheel")
    run(uv, "build", "--wheel", "--out-dir", where / "dist", ROOT)
    (wheel,) = (where / "dist").glob("laneway-*.whl")
    run(uv, "venv", "--quiet", "--python", sys.executable, where / "venv")
    python = where / "venv" / "bin" / "python"
    # One resolve for both; no ahead-of-time bytecode: the few modules the demo
    # imports compile as they load, far cheaper than compiling every installed file.
    install: list[str | Path] = ["pip", "install", "--quiet", "--no-compile-bytecode"]
    run(uv, *install, "--python", python, wheel, "openai")
    return where / "venv"


@pytest.fixture
def demo(
    venv: Path, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str, dict[str, str]]]:
    """``laneway serve --demo`` from the venv: the process, its banner, its environment."""
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    env.pop("VIRTUAL_ENV", None)
    env.pop("UV", None)  # the wheel installed in a venv, not run under uv
    proc = subprocess.Popen(
        [venv / "bin" / "laneway", "serve", "--demo", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
    )
    try:
        yield proc, read_banner(proc), env
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def printed_commands(text: str) -> list[str]:
    """The commands under the banner's ``try:`` line, comments dropped."""
    lines = text[text.index("try:\n") :].splitlines()[1:]
    commands = [line.strip() for line in lines if line.startswith("  ")]
    return [c.split("   # ")[0] for c in commands if c and not c.startswith("#")]


def shell(command: str, env: dict[str, str]) -> str:
    """Run a printed command as a user would paste it; it must succeed."""
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout


def wait_for_rows(database: Path, lane: str, timeout: float = 30.0) -> None:
    """Poll the demo's telemetry until a row of ``lane`` is written (it flushes every second)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(sqlite3.Error), closing(sqlite3.connect(database)) as db:
            if db.execute("SELECT count(*) FROM calls WHERE lane = ?", (lane,)).fetchone()[0]:
                return
        assert time.monotonic() < deadline, f"no telemetry row of {lane} in {timeout:g} s"
        time.sleep(0.1)


def test_the_wheel_carries_no_dev_tools(venv: Path) -> None:
    found = run(
        venv / "bin" / "python",
        "-c",
        "import importlib.util as u; "
        "print([m for m in ('pytest', 'mypy', 'ruff', 'redis', 'asyncpg') if u.find_spec(m)])",
    )
    assert found.strip() == "[]"


def test_the_demo_answers_every_command_it_prints(
    demo: tuple[subprocess.Popen[bytes], str, dict[str, str]],
) -> None:
    proc, text, env = demo
    commands = printed_commands(text)
    assert any(c.startswith("curl") for c in commands)
    assert any(c.startswith("python -c") for c in commands)
    assert any(c.startswith("laneway spend") for c in commands)
    spend = next(c for c in commands if c.startswith("laneway spend"))
    calls = [c for c in commands if c != spend]
    telemetry = Path(spend.split("--config ")[1].split()[0]).parent / "laneway.sqlite3"
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:  # the slow lane takes 2.5 s
        answers = {c: pool.submit(shell, c, env) for c in calls}
        wait_for_rows(telemetry, "demo-chat")
        outputs = {spend: shell(spend, env)}
        outputs |= {c: answer.result() for c, answer in answers.items()}
    for command, out in outputs.items():
        if "demo-slow" in command:
            assert "HTTP/1.1 504" in out, "the slow lane shows its deadline ending the call"
        elif command.startswith("curl") and "/v1/" in command:
            assert '"error"' not in out, f"{command}: {out}"
    streamed = next(out for c, out in outputs.items() if "-sN" in c)
    assert "data: [DONE]" in streamed
    spent = next(out for c, out in outputs.items() if c.startswith("laneway spend"))
    assert "demo-chat" in spent
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == -signal.SIGTERM
    folder = Path(env["TMPDIR"])
    assert not list(folder.glob("laneway-demo-*")), "the demo removes its folder when it stops"
