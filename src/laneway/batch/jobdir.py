"""A job directory: the manifest that says what a job is, and its checkpoint.

``manifest.json`` names the lane, its models, the hash of everything that
shapes a result (lane kind, sources' providers and models, dimensions, the
job's request parameters), the input's hash, the items per call and the
vector length (pinned, or the first vector's once one is seen). A rerun
whose manifest differs in any of these is refused by name: results of
another model or length must never be mixed into one corpus. A job that holds
no result yet (every call so far failed, as when a job stopped on a pinned
length its source does not answer) has nothing to mix: it starts afresh with
the new settings, and says so.

``checkpoint.jsonl`` holds one line per finished call (its rows and its
failures), appended with a single write as each call ends, so a killed
process (SIGKILL included) loses only the calls in flight. A line cut short
by the kill is dropped when the job reopens. Lines are not synced to disk one
by one (that would cost more than the calls on a fast upstream): a power cut
may lose the last lines written, which the rerun then makes again. A later line for the same call
(a ``--retry-failures`` run) replaces the earlier one. ``failures.jsonl``
lists the items that failed, rewritten at the end of every run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from laneway.batch.results import ItemResult, from_failure, from_row
from laneway.core.errors import JobMismatch

MANIFEST = "manifest.json"
CHECKPOINT = "checkpoint.jsonl"
FAILURES = "failures.jsonl"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a job is; two runs are the same job when these agree."""

    lane: str
    kind: str
    models: list[str]
    config_hash: str
    input_hash: str
    items: int
    chunk_items: int
    dimension: int | None = None
    dimension_from: str | None = None
    version: int = FORMAT_VERSION

    def refusal(self, wanted: Manifest) -> str | None:
        """Why ``wanted`` may not continue this job, or ``None`` when it may."""
        if self.version != wanted.version:
            return f"it was written by job format {self.version}, this is {wanted.version}"
        if self.lane != wanted.lane:
            return f"it is a job of lane {self.lane!r}, not {wanted.lane!r}"
        if self.models != wanted.models:
            return f"its results come from models {self.models}, the lane now has {wanted.models}"
        if wanted.dimension is not None and self.dimension not in (None, wanted.dimension):
            return (
                f"its vectors are {self.dimension} long ({self.dimension_from}), "
                f"the lane now pins dimensions {wanted.dimension}"
            )
        if self.config_hash != wanted.config_hash:
            return "the lane's kind, sources, dimensions or the job's parameters changed"
        if self.input_hash != wanted.input_hash:
            return "the input changed since the job began"
        return None


@dataclass(frozen=True, slots=True)
class Call:
    """Where a finished call's checkpoint line is, and which of its items failed."""

    offset: int
    failed: tuple[int, ...]
    rows: int


class JobDir:
    """An open job directory: its manifest and the checkpoint it appends to."""

    def __init__(
        self, path: Path, manifest: Manifest, calls: dict[int, Call], restarted: str | None = None
    ) -> None:
        self.path = path
        self.manifest = manifest
        self.calls = calls
        self.restarted = restarted
        """Why the job started afresh in a directory that held no result, or ``None``."""
        self._fd = os.open(path / CHECKPOINT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._reader = (path / CHECKPOINT).open("rb")

    @classmethod
    def open(cls, path: Path, wanted: Manifest) -> JobDir:
        """Open (or start) the job at ``path``; ``JobMismatch`` if it is another job.

        Another job's directory that holds no result is taken over (see the
        module doc); ``restarted`` then says what changed.
        """
        path.mkdir(parents=True, exist_ok=True)
        manifest_path = path / MANIFEST
        if not manifest_path.exists():
            return cls.started(path, wanted)
        found = Manifest(**orjson.loads(manifest_path.read_bytes()))
        refusal = found.refusal(wanted)
        calls = load_calls(path / CHECKPOINT)
        if refusal is None:
            return cls(path, found, calls)
        if any(call.rows for call in calls.values()):
            raise JobMismatch(
                f"job directory {path} cannot be resumed: {refusal}; "
                "start a new job directory (or remove this one) to run it afresh"
            )
        return cls.started(path, wanted, f"{refusal}, and it held no result")

    @classmethod
    def started(cls, path: Path, manifest: Manifest, restarted: str | None = None) -> JobDir:
        """A new job at ``path``: its manifest written, no checkpoint."""
        write_manifest(path, manifest)
        (path / CHECKPOINT).unlink(missing_ok=True)
        (path / FAILURES).unlink(missing_ok=True)
        return cls(path, manifest, {}, restarted)

    def record_dimension(self, dimension: int) -> None:
        """Keep the first vector's length: every later vector must match it."""
        self.manifest = Manifest(
            **{**asdict(self.manifest), "dimension": dimension, "dimension_from": "first vector"}
        )
        write_manifest(self.path, self.manifest)

    def append(self, call: int, results: list[ItemResult]) -> None:
        """Checkpoint one finished call: a single appended line, rows and failures."""
        rows = [[r.index, r.row()] for r in results if r.ok]
        failures = [r.failure() for r in results if not r.ok]
        line = orjson.dumps({"call": call, "rows": rows, "failures": failures}) + b"\n"
        offset = os.lseek(self._fd, 0, os.SEEK_END)
        os.write(self._fd, line)
        self.calls[call] = Call(offset, tuple(f["index"] for f in failures), len(rows))

    def read(self, call: int) -> list[ItemResult]:
        """The results of a checkpointed call, rows and failures, in input order."""
        self._reader.seek(self.calls[call].offset)
        return parse_line(self._reader.readline())

    def failed(self) -> list[ItemResult]:
        """Every failed item the checkpoint holds, in input order."""
        failing = sorted(call for call, kept in self.calls.items() if kept.failed)
        return [result for call in failing for result in self.read(call) if not result.ok]

    def write_failures(self, failures: list[ItemResult]) -> None:
        """Rewrite ``failures.jsonl`` with the items that failed, in input order."""
        lines = b"".join(orjson.dumps(r.failure()) + b"\n" for r in failures)
        write_atomically(self.path / FAILURES, lines)

    def close(self) -> None:
        """Close the checkpoint (its lines are already with the OS: see the module doc)."""
        os.close(self._fd)
        self._reader.close()


def parse_line(line: bytes) -> list[ItemResult]:
    """A checkpoint line's results in input order."""
    data = orjson.loads(line)
    call = data["call"]
    results = [from_row(index, row) for index, row in data["rows"]]
    results += [from_failure(call, failure) for failure in data["failures"]]
    return sorted(results, key=lambda r: r.index)


def load_calls(path: Path) -> dict[int, Call]:
    """Every call in the checkpoint (the last line of each wins); a torn tail is cut off."""
    calls: dict[int, Call] = {}
    if not path.exists():
        return calls
    good = 0
    for offset, line in _lines(path):
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            break
        failed = tuple(f["index"] for f in data["failures"])
        calls[data["call"]] = Call(offset, failed, len(data["rows"]))
        good = offset + len(line)
    if good != path.stat().st_size:
        os.truncate(path, good)
    return calls


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Each complete line with its offset (a last line without its newline is torn)."""
    offset = 0
    with path.open("rb") as file:
        for line in file:
            if not line.endswith(b"\n"):
                return
            yield offset, line
            offset += len(line)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a synced temporary file and a rename."""
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def write_manifest(path: Path, manifest: Manifest) -> None:
    """Write the job directory's manifest (atomically)."""
    data = orjson.dumps(asdict(manifest), option=orjson.OPT_INDENT_2)
    write_atomically(path / MANIFEST, data)
