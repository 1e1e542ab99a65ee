"""Where a running ``laneway serve`` says who it is and how its last reload went.

Each server writes ``laneway-<pid>.json`` in the run folder: its pid, config
file, URL, the config generation and hash in force, and the outcome of its
last reload (``reloads`` counts the SIGHUPs it has answered, so
``laneway reload`` knows when its own has been). The file is replaced
atomically and removed at exit. The run folder is, in order:
``--run-dir``, ``$LANEWAY_RUN_DIR``, ``$RUNTIME_DIRECTORY`` (systemd's
``RuntimeDirectory=``), ``$XDG_RUNTIME_DIR/laneway``, else
``<temp dir>/laneway-<uid>``; it is made private (mode 0700).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from laneway.core.processes import running

RUN_DIR_ENV = "LANEWAY_RUN_DIR"
SYSTEMD_RUNTIME_ENV = "RUNTIME_DIRECTORY"
PREFIX = "laneway-"


def run_dir(explicit: str | None = None) -> Path:
    """The run folder (see the module doc); not created here."""
    for value in (explicit, os.environ.get(RUN_DIR_ENV), os.environ.get(SYSTEMD_RUNTIME_ENV)):
        if value:
            return Path(value.split(":")[0])  # systemd lists several folders with ':'
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "laneway"
    return Path(tempfile.gettempdir()) / f"laneway-{os.getuid()}"


@dataclass(frozen=True, slots=True)
class LastReload:
    """How the last reload ended: ``applied``, or ``refused`` with the reason (old config kept)."""

    outcome: str
    reason: str | None
    at: float


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What a running server says of itself in its status file."""

    pid: int
    config: str
    url: str
    host: str
    insecure: bool
    workers: int
    generation: int
    hash: str
    reloads: int = 0
    last: LastReload | None = None

    def reloaded(self, generation: int, hash_: str) -> ServerStatus:
        """This status after a reload that put ``generation`` (of ``hash_``) in service."""
        last = LastReload("applied", None, time.time())
        return replace(self, generation=generation, hash=hash_, reloads=self.reloads + 1, last=last)

    def refused(self, reason: str) -> ServerStatus:
        """This status after a refused reload: the same config in service, and why."""
        return replace(
            self, reloads=self.reloads + 1, last=LastReload("refused", reason, time.time())
        )


class StatusFile:
    """``laneway-<pid>.json`` in a run folder: written whole each time, removed at exit."""

    def __init__(self, folder: Path, pid: int) -> None:
        self.folder = folder
        self.path = folder / f"{PREFIX}{pid}.json"

    def write(self, status: ServerStatus) -> None:
        """Replace the file with ``status`` (temp file + rename: readers see all or nothing)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = self.path.with_suffix(".tmp")
        temp.write_bytes(orjson.dumps(asdict(status)))
        os.replace(temp, self.path)

    def read(self) -> ServerStatus | None:
        """The status in the file, or ``None`` when there is none (or it is unreadable)."""
        try:
            return status_from(orjson.loads(self.path.read_bytes()))
        except (OSError, orjson.JSONDecodeError, TypeError, KeyError):
            return None

    def remove(self) -> None:
        """Remove the file (the server is stopping)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def status_from(data: dict[str, Any]) -> ServerStatus:
    """A ``ServerStatus`` from its JSON form."""
    last = data.pop("last", None)
    return ServerStatus(**data, last=None if last is None else LastReload(**last))


def running_servers(folder: Path) -> list[ServerStatus]:
    """The servers with a status file in ``folder`` whose process is alive."""
    found = []
    for path in sorted(folder.glob(f"{PREFIX}*.json")):
        pid = path.stem.removeprefix(PREFIX)
        status = StatusFile(folder, int(pid)).read() if pid.isdigit() else None
        if status is not None and running(status.pid):
            found.append(status)
    return found


def write_pidfile(path: Path) -> None:
    """Write this process's pid to ``path`` (``laneway serve --pidfile``)."""
    path.write_text(f"{os.getpid()}\n", encoding="ascii")


def read_pidfile(path: Path) -> int:
    """The pid in ``path``; ``ValueError`` when it holds none."""
    text = path.read_text(encoding="ascii").strip()
    if not text.isdigit():
        raise ValueError(f"{path} holds no pid")
    return int(text)
