"""Where a job's rows go: JSONL, or (embed lanes) Parquet or ``.npy`` plus an ids file.

Every writer receives the successful results in input order and writes to a
temporary file beside the target, renamed into place when the job ends: an
output file that exists is a complete one. JSONL rows are the checkpointed
rows, byte for byte; Parquet and ``.npy`` hold the vectors as float32 (the
JSONL keeps the float64 values the upstream sent). pyarrow and numpy are
optional: ``pip install 'laneway[parquet]'`` or ``'laneway[npy]'``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Protocol

import orjson

from laneway.batch.results import ItemResult
from laneway.core.errors import RequestInvalid

PARQUET_ROWS = 8192
"""Rows per Parquet row group (and per write)."""
NPY_ROWS = 65536
"""Rows copied at a time when the ``.npy`` file is assembled."""


class OutputWriter(Protocol):
    """Takes each successful result in order; ``close`` puts the file in place."""

    def write(self, result: ItemResult) -> None: ...
    def close(self) -> list[Path]: ...
    def abandon(self) -> None: ...


def output_format(path: Path) -> str:
    """``jsonl``, ``parquet`` or ``npy``, from the output's suffix."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".npy"):
        return suffix[1:]
    raise RequestInvalid("output", f"{path.name}: write .jsonl, .parquet or .npy")


def open_writer(path: Path, kind: str) -> OutputWriter:
    """The writer for ``path``'s format; Parquet and ``.npy`` need an embed lane."""
    fmt = output_format(path)
    if fmt == "jsonl":
        return JsonlWriter(path)
    if kind != "embed":
        raise RequestInvalid("output", f"{fmt} output holds vectors: it needs an embed lane")
    return ParquetWriter(path) if fmt == "parquet" else NpyWriter(path)


def optional(module: str, extra: str) -> Any:
    """Import an optional dependency, or say which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise RequestInvalid(
            "output", f"this format needs {module}: pip install 'laneway[{extra}]'"
        ) from None


def temporary(path: Path) -> Path:
    """The file a writer fills before it is renamed to ``path``."""
    return path.with_name(f".{path.name}.partial")


class JsonlWriter:
    """One JSON row per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = temporary(path).open("wb")

    def write(self, result: ItemResult) -> None:
        """Append the result's row."""
        self.file.write(orjson.dumps(result.row()) + b"\n")

    def close(self) -> list[Path]:
        """Rename the finished file into place."""
        self.file.close()
        os.replace(temporary(self.path), self.path)
        return [self.path]

    def abandon(self) -> None:
        """Drop the unfinished file."""
        self.file.close()
        temporary(self.path).unlink(missing_ok=True)


class ParquetWriter:
    """Columns ``id`` (string) and ``embedding`` (fixed-size list of float32)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pa = optional("pyarrow", "parquet")
        self.pq = optional("pyarrow.parquet", "parquet")
        self.ids: list[str] = []
        self.vectors: list[list[float]] = []
        self.writer: Any = None

    def write(self, result: ItemResult) -> None:
        """Buffer the row; a full row group is written out."""
        self.ids.append(result.id)
        self.vectors.append(result.embedding)
        if len(self.ids) >= PARQUET_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.ids:
            return
        pa = self.pa
        dimension = len(self.vectors[0])
        values = pa.array([v for vector in self.vectors for v in vector], pa.float32())
        embedding = pa.FixedSizeListArray.from_arrays(values, dimension)
        table = pa.table({"id": pa.array(self.ids, pa.string()), "embedding": embedding})
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(temporary(self.path), table.schema)
        self.writer.write_table(table)
        self.ids, self.vectors = [], []

    def close(self) -> list[Path]:
        """Write the last row group and rename the file into place."""
        self._flush()
        if self.writer is None:
            pa = self.pa
            schema = pa.schema([("id", pa.string()), ("embedding", pa.list_(pa.float32()))])
            self.writer = self.pq.ParquetWriter(temporary(self.path), schema)
        self.writer.close()
        os.replace(temporary(self.path), self.path)
        return [self.path]

    def abandon(self) -> None:
        """Drop the unfinished file."""
        if self.writer is not None:
            self.writer.close()
        temporary(self.path).unlink(missing_ok=True)


class NpyWriter:
    """A ``(rows, dimension)`` float32 array, and ``<name>.ids.jsonl`` (one JSON id a line).

    Vectors are streamed to a raw scratch file, since the row count is known
    only at the end; the array is assembled from it then.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids_path = path.with_suffix(".ids.jsonl")
        self.np = optional("numpy", "npy")
        self.raw = path.with_name(f".{path.name}.raw").open("wb")
        self.ids = temporary(self.ids_path).open("wb")
        self.rows = 0
        self.dimension: int | None = None

    def write(self, result: ItemResult) -> None:
        """Append the vector and the id."""
        vector = result.embedding
        self.dimension = self.dimension or len(vector)
        self.raw.write(self.np.asarray(vector, dtype="<f4").tobytes())
        self.ids.write(orjson.dumps(result.id) + b"\n")
        self.rows += 1

    def close(self) -> list[Path]:
        """Assemble the array, then rename it and the ids file into place."""
        self.raw.close()
        self.ids.close()
        np = self.np
        raw_path = Path(self.raw.name)
        shape = (self.rows, self.dimension or 0)
        array = np.lib.format.open_memmap(temporary(self.path), "w+", "<f4", shape)
        with raw_path.open("rb") as raw:
            for start in range(0, self.rows, NPY_ROWS):
                block = np.frombuffer(raw.read(NPY_ROWS * shape[1] * 4), dtype="<f4")
                array[start : start + NPY_ROWS] = block.reshape(-1, shape[1])
        array.flush()
        del array
        raw_path.unlink()
        os.replace(temporary(self.path), self.path)
        os.replace(temporary(self.ids_path), self.ids_path)
        return [self.path, self.ids_path]

    def abandon(self) -> None:
        """Drop the unfinished files."""
        self.raw.close()
        self.ids.close()
        Path(self.raw.name).unlink(missing_ok=True)
        temporary(self.ids_path).unlink(missing_ok=True)
