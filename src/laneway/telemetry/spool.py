"""``Spool``: telemetry rows the database could not take yet, kept in order in a local file.

While the database is unreachable the writer appends rows here (one JSON
array a line) and, once it answers again, writes them back from the head,
oldest first, before anything newer. The file is bounded by ``max_bytes``:
rows that would pass it are dropped, the only way a row is ever lost. The
offset of the rows already written is kept in a sidecar file, so a gateway
that stops mid-replay resumes where it was instead of writing rows twice.

Each process spools to a file of its own, named by its process id, beside
the config (``laneway-telemetry.<pid>.spool``); at start a writer adopts the
spools of processes that no longer run, so rows survive a restart. The
methods do blocking file I/O: the writer calls them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import orjson

from laneway.telemetry.port import Row

PREFIX = "laneway-telemetry."
SUFFIX = ".spool"


def spool_path(folder: Path, pid: int | None = None) -> Path:
    """The spool file of process ``pid`` (default: this one) in ``folder``."""
    return folder / f"{PREFIX}{os.getpid() if pid is None else pid}{SUFFIX}"


class Spool:
    """A bounded FIFO of rows in the file at ``path``; see the module doc."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.rows = 0
        """Rows waiting in the file."""
        self._offset_path = path.with_name(path.name + ".offset")
        self._offset = 0
        self._size = 0

    def adopt(self) -> int:
        """Take in this folder's spools of processes no longer running; return their rows.

        Their waiting rows are appended to this spool, oldest file first, and
        the files removed. A spool this process left (same path) is resumed.
        """
        self._offset = _read_offset(self._offset_path)
        self._size = self.path.stat().st_size if self.path.exists() else 0
        self.rows = self._count_from(self._offset)
        adopted = 0
        for orphan in _orphans(self.path):
            offset = _read_offset(orphan.with_name(orphan.name + ".offset"))
            with orphan.open("rb") as file:
                file.seek(offset)
                data = file.read()
            lines = data.count(b"\n")
            if lines and self._fits(len(data)):
                self._write(data, lines)
                adopted += lines
            orphan.unlink()
            with contextlib.suppress(FileNotFoundError):
                orphan.with_name(orphan.name + ".offset").unlink()
        return adopted

    def append(self, rows: Sequence[Row]) -> int:
        """Add ``rows`` at the tail; return how many did not fit (dropped)."""
        data = bytearray()
        kept = 0
        for row in rows:
            line = orjson.dumps(list(row)) + b"\n"
            if not self._fits(len(data) + len(line)):
                break
            data += line
            kept += 1
        if kept:
            self._write(bytes(data), kept)
        return len(rows) - kept

    def head(self, count: int) -> tuple[list[Row], int]:
        """Up to ``count`` rows from the head, and the offset just past them.

        None when the file is gone (removed by hand).
        """
        rows: list[Row] = []
        if not self.path.exists():
            return rows, 0
        with self.path.open("rb") as file:
            file.seek(self._offset)
            for line in file:
                rows.append(tuple(orjson.loads(line)))
                if len(rows) == count:
                    break
            return rows, file.tell()

    def advance(self, offset: int, count: int) -> None:
        """Mark the rows up to ``offset`` written; an emptied spool is removed."""
        self.rows -= count
        if offset >= self._size:
            self.clear()
            return
        self._offset = offset
        temporary = self._offset_path.with_name(self._offset_path.name + ".tmp")
        temporary.write_text(str(offset))
        temporary.replace(self._offset_path)

    def clear(self) -> None:
        """Remove the file and its offset."""
        for path in (self.path, self._offset_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._offset = self._size = self.rows = 0

    def _fits(self, extra: int) -> bool:
        return self._size + extra <= self.max_bytes

    def _write(self, data: bytes, lines: int) -> None:
        with self.path.open("ab") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        self._size += len(data)
        self.rows += lines

    def _count_from(self, offset: int) -> int:
        if not self._size:
            return 0
        with self.path.open("rb") as file:
            file.seek(offset)
            return file.read().count(b"\n")


def _read_offset(path: Path) -> int:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return 0


def _orphans(own: Path) -> list[Path]:
    """Spools in ``own``'s folder whose process is gone, oldest first."""
    found = []
    for path in own.parent.glob(f"{PREFIX}*{SUFFIX}"):
        pid = path.name.removeprefix(PREFIX).removesuffix(SUFFIX)
        if path != own and pid.isdigit() and not _running(int(pid)):
            found.append(path)
    return sorted(found, key=lambda p: p.stat().st_mtime)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
