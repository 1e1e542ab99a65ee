"""``laneway batch`` end to end: SIGKILL and resume, a terminal's progress line, exit codes."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import orjson
import pyarrow.parquet as pq
import pytest

from laneway.batch.jobdir import CHECKPOINT, FAILURES
from laneway.cli.main import main
from laneway.sim import RunningSim
from tests.engine.spy import sim_hits
from tests.helpers import sim_url, unique_spec

COMMAND = [sys.executable, "-c", "import sys; from laneway.cli.main import main; sys.exit(main())"]


def write_config(path: Path, sim: RunningSim, spec: str, **lane: object) -> Path:
    """A laneway.yaml with one embed lane ``emb`` on ``spec``."""
    extra = "".join(f"    {key}: {value}\n" for key, value in lane.items())
    path.write_text(
        "lanes:\n  emb:\n    kind: embed\n    dimensions: 8\n" + extra + "    sources:\n"
        f"      - base_url: {sim_url(sim, spec)}\n        model: embed-model\n"
        "        price: {input: 0.02}\n"
    )
    return path


def write_corpus(path: Path, count: int) -> Path:
    """A JSONL corpus of ``count`` items with ids ``doc-N``."""
    lines = (orjson.dumps({"id": f"doc-{n}", "text": f"passage {n}"}) + b"\n" for n in range(count))
    path.write_bytes(b"".join(lines))
    return path


def checkpoint_lines(job_dir: Path) -> int:
    path = job_dir / CHECKPOINT
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def test_a_sigkill_halfway_and_a_rerun_write_the_same_bytes_as_one_run(sim, tmp_path) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 1000)
    slow = write_config(tmp_path / "slow.yaml", sim, unique_spec("sleep=0.03"), max_batch_items=10)
    out = tmp_path / "out.jsonl"
    argv = ["batch", "emb", str(corpus), "-o", str(out), "--max-concurrency", "2"]
    job = tmp_path / "out.jsonl.job"
    child = subprocess.Popen([*COMMAND, *argv, "--config", str(slow)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while checkpoint_lines(job) < 30 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL, "killed while it ran"
    kept = checkpoint_lines(job)
    assert 30 <= kept < 100 and not out.exists(), "70 calls of 30 ms, 2 at a time, were left"
    fast_spec = unique_spec("ok")
    fast = write_config(tmp_path / "fast.yaml", sim, fast_spec, max_batch_items=10)
    assert main([*argv, "--config", str(fast)]) == 0
    made = asyncio.run(sim_hits(sim, fast_spec))
    assert made == 100 - kept, "only the calls not checkpointed were made again"
    straight = tmp_path / "straight.jsonl"
    assert main(["batch", "emb", str(corpus), "-o", str(straight), "--config", str(fast)]) == 0
    assert out.read_bytes() == straight.read_bytes()
    assert len(out.read_bytes().splitlines()) == 1000


def test_a_terminal_gets_a_live_progress_line(sim, tmp_path, monkeypatch) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 40)
    config = write_config(tmp_path / "laneway.yaml", sim, unique_spec("ok"), max_batch_items=4)
    argv = ["batch", "emb", str(corpus), "-o", str(tmp_path / "out.jsonl"), "--config", str(config)]
    leader, follower = pty.openpty()
    with ThreadPoolExecutor(1) as reader:
        shown = reader.submit(read_until_closed, leader, time.monotonic() + 60)
        with os.fdopen(follower, "w", buffering=1) as terminal:
            monkeypatch.setattr(sys, "stderr", terminal)
            status = main(argv)
            monkeypatch.undo()
        assert status == 0
        seen = shown.result(timeout=30)
    assert b"\r\x1b[2K40/40 (100.0%)" in seen
    assert b"items/s" in seen and b"concurrency" in seen and b"errors 0" in seen
    assert b"OBSERVED len(embedding) = 8 (40 vectors checked" in seen


def read_until_closed(fd: int, deadline: float) -> bytes:
    """Everything the pseudo-terminal shows until its other end is closed."""
    chunks = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def test_without_a_terminal_only_the_summary_is_printed(sim, tmp_path, capsys) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 12)
    config = write_config(tmp_path / "laneway.yaml", sim, unique_spec("ok"), max_batch_items=5)
    out = tmp_path / "out.jsonl"
    assert main(["batch", "emb", str(corpus), "-o", str(out), "--config", str(config)]) == 0
    err = capsys.readouterr().err
    assert "items/s" not in err and "\x1b" not in err
    assert "OBSERVED len(embedding) = 8 (12 vectors checked" in err
    assert "tokens: " in err and "provider-reported (3 calls)" in err
    assert "USD priced (3 calls)" in err
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [row["id"] for row in rows] == [f"doc-{n}" for n in range(12)]


def test_progress_json_is_one_object_a_line(sim, tmp_path, capsys) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 12)
    config = write_config(tmp_path / "laneway.yaml", sim, unique_spec("ok"), max_batch_items=5)
    argv = ["batch", "emb", str(corpus), "-o", str(tmp_path / "o.jsonl"), "--config", str(config)]
    assert main([*argv, "--progress", "json"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    last = orjson.loads(lines[-1])
    assert last["final"] and last["done"] == 12 and last["total"] == 12 and last["failed"] == 0


def test_failures_exit_non_zero_and_retry_failures_reruns_only_them(sim, tmp_path, capsys) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 6)
    broken = write_config(
        tmp_path / "broken.yaml", sim, unique_spec("status=503"), max_batch_items=4
    )
    out = tmp_path / "out.jsonl"
    argv = ["batch", "emb", str(corpus), "-o", str(out)]
    assert main([*argv, "--config", str(broken)]) == 1
    err = capsys.readouterr().err
    assert "FAILED: 6 items (upstream_error 6)" in err and "--retry-failures" in err
    assert len((tmp_path / "out.jsonl.job" / FAILURES).read_bytes().splitlines()) == 6
    assert out.read_bytes() == b""
    healed = write_config(tmp_path / "healed.yaml", sim, unique_spec("ok"), max_batch_items=4)
    assert main([*argv, "--config", str(healed), "--retry-failures"]) == 0
    assert len(out.read_bytes().splitlines()) == 6


def test_a_changed_dimension_is_refused_by_name(sim, tmp_path, capsys) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 3)
    spec = unique_spec("ok")
    out = tmp_path / "out.jsonl"
    argv = ["batch", "emb", str(corpus), "-o", str(out), "--config"]
    assert main([*argv, str(write_config(tmp_path / "a.yaml", sim, spec))]) == 0
    changed = tmp_path / "b.yaml"
    changed.write_text((tmp_path / "a.yaml").read_text().replace("dimensions: 8", "dimensions: 4"))
    assert main([*argv, str(changed)]) == 1
    assert "its vectors are 8 long (pinned dimensions), the lane now pins dimensions 4" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("name", ["vectors.parquet", "vectors.npy"])
def test_vectors_can_be_written_as_parquet_or_npy(sim, tmp_path, name) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 9)
    config = write_config(tmp_path / "laneway.yaml", sim, unique_spec("ok"), max_batch_items=4)
    out = tmp_path / name
    assert main(["batch", "emb", str(corpus), "-o", str(out), "--config", str(config)]) == 0
    jsonl = tmp_path / "same.jsonl"
    assert main(["batch", "emb", str(corpus), "-o", str(jsonl), "--config", str(config)]) == 0
    rows = [orjson.loads(line) for line in jsonl.read_bytes().splitlines()]
    if name.endswith(".npy"):
        array = np.load(out)
        ids_file = (tmp_path / "vectors.ids.jsonl").read_bytes()
        ids = [orjson.loads(line) for line in ids_file.splitlines()]
        assert array.dtype == np.float32 and array.shape == (9, 8)
    else:
        table = pq.read_table(out)
        ids = table.column("id").to_pylist()
        array = np.asarray(table.column("embedding").to_pylist(), dtype=np.float32)
    assert ids == [row["id"] for row in rows]
    expected = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
    assert np.array_equal(array, expected)
