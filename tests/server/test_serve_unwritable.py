"""``serve`` refuses to start when telemetry (or its spool, or the cache) cannot be written.

The issue's case: systemd's ``User=laneway`` with a root-owned ``/etc/laneway``
beside the config. The check runs as a user who cannot write the folder: the
test's own user when it is not root, else a forked child turned ``nobody``.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from laneway.cli.main import main
from laneway.cli.serve import main as serve_main
from laneway.cli.writable import unwritable
from laneway.config.load import load_config

NOBODY = 65534
CONFIG = "lanes:\n  chat:\n    sources:\n      - {base_url: 'http://127.0.0.1:9/v1', model: m}\n"


@pytest.fixture
def root_owned() -> Iterator[Path]:
    """A config in a folder this test's user (or ``nobody``) can read but not write."""
    top = Path(tempfile.mkdtemp(prefix="laneway-unwritable-", dir="/tmp"))
    top.chmod(0o755)
    folder = top / "etc-laneway"
    folder.mkdir()
    (folder / "laneway.yaml").write_text(CONFIG)
    folder.chmod(0o555)
    try:
        yield folder / "laneway.yaml"
    finally:
        folder.chmod(0o755)
        shutil.rmtree(top)


def as_other_user(work: Callable[[], object]) -> object:
    """``work()``'s result, run by a user who cannot write ``root_owned`` (30 s at most)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_end)
            if os.getuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.write(write_end, orjson.dumps(work()))
        finally:
            os._exit(0)
    os.close(write_end)
    with selectors.DefaultSelector() as selector:
        selector.register(read_end, selectors.EVENT_READ)
        ready = selector.select(30)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    data = os.read(read_end, 1 << 20) if ready else b"null"
    os.close(read_end)
    os.waitpid(pid, 0)
    return orjson.loads(data)


def test_a_folder_the_user_cannot_write_is_named_with_its_setting(root_owned: Path) -> None:
    config = load_config(root_owned)[0]
    problems = as_other_user(lambda: unwritable(config, root_owned.parent))
    assert isinstance(problems, list) and len(problems) == 2
    telemetry, spool = problems
    assert telemetry.startswith("telemetry cannot be written: the folder ")
    assert f"{root_owned.parent} is not writable" in telemetry and "(telemetry.url)" in telemetry
    assert "StateDirectory=laneway" in telemetry and "(telemetry.spool_dir)" in spool


def test_serve_refuses_to_start_when_telemetry_cannot_be_written(root_owned: Path) -> None:
    def serve() -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = serve_main(["--config", str(root_owned), "--port", "0"])
        return status, err.getvalue()

    result = as_other_user(serve)
    assert isinstance(result, list)
    status, err = result
    assert status == 2 and "telemetry cannot be written" in err


def test_a_writable_folder_has_nothing_to_say(tmp_path: Path) -> None:
    (tmp_path / "laneway.yaml").write_text(CONFIG)
    assert unwritable(load_config(tmp_path / "laneway.yaml")[0], tmp_path) == []


def test_check_refuses_what_serve_refuses_in_the_same_words(root_owned: Path) -> None:
    """Failed before: ``laneway check`` exited 0 on a config ``serve`` refused to start."""

    def both() -> list[tuple[int, str]]:
        verdicts = []
        for command, argv in (
            (main, ["check", str(root_owned)]),
            (serve_main, ["--config", str(root_owned), "--port", "0"]),
        ):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                verdicts.append((command(argv), err.getvalue()))
        return verdicts

    warm = root_owned.parents[1] / "warm.yaml"  # check imports as it goes: import as root first
    warm.write_text(CONFIG)
    with contextlib.redirect_stdout(io.StringIO()):
        main(["check", str(warm)])
    result = as_other_user(both)
    assert isinstance(result, list)
    (checked, check_err), (served, serve_err) = result
    assert (checked, served) == (1, 2), "check: the config has errors; serve: it cannot start"
    said = [line.removeprefix("error: ") for line in check_err.splitlines()]
    assert len(said) == 2 and said[0].startswith("telemetry cannot be written")
    assert all(line in serve_err for line in said)


def test_check_passes_a_writable_folder(tmp_path: Path) -> None:
    (tmp_path / "laneway.yaml").write_text(CONFIG)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["check", str(tmp_path / "laneway.yaml")]) == 0
