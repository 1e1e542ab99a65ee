"""``Spool``: telemetry rows the database could not take yet, kept in order in a local file.

While the database is unreachable the writer appends batches of rows here
(one line a batch: its name and its rows, as JSON) and, once it answers
again, writes them back from the head, oldest first, before anything newer.
A batch keeps its name through every retry, and the store records the names
it has written in the same transaction as the rows, so a write whose answer
was lost (the database committed, the connection broke) is not applied twice.
The file is bounded by ``max_bytes``: rows that would pass it are dropped,
the only way a row is ever lost. The offset of the batches already written
is kept in a sidecar file, so a gateway that stops mid-replay resumes where
it was.

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

from laneway.core.processes import running
from laneway.telemetry.port import Row

Batch = tuple[str, Sequence[Row]]
"""A batch's name and its rows."""

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
            rows = _count_rows(data)
            if rows and self._fits(len(data)):
                self._write(data, rows)
                adopted += rows
            orphan.unlink()
            with contextlib.suppress(FileNotFoundError):
                orphan.with_name(orphan.name + ".offset").unlink()
        return adopted

    def append(self, batches: Sequence[Batch]) -> int:
        """Add named batches at the tail; return how many rows did not fit (dropped)."""
        data = bytearray()
        kept = dropped = 0
        for name, rows in batches:
            line = orjson.dumps([name, [list(row) for row in rows]]) + b"\n"
            if dropped or not self._fits(len(data) + len(line)):
                dropped += len(rows)
                continue
            data += line
            kept += len(rows)
        if kept:
            self._write(bytes(data), kept)
        return dropped

    def head(self) -> tuple[Batch | None, int]:
        """The batch at the head (``None`` when there is none) and the offset past it."""
        if not self.path.exists():
            return None, 0
        with self.path.open("rb") as file:
            file.seek(self._offset)
            line = file.readline()
            if not line:
                return None, self._offset
            name, rows = orjson.loads(line)
            return (name, [tuple(row) for row in rows]), file.tell()

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
            return _count_rows(file.read())


def _count_rows(data: bytes) -> int:
    """Rows in the batch lines of ``data``."""
    return sum(len(orjson.loads(line)[1]) for line in data.splitlines() if line)


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
        if path != own and pid.isdigit() and not running(int(pid)):
            found.append(path)
    return sorted(found, key=lambda p: p.stat().st_mtime)
    return True
