"""``laneway batch LANE INPUT -o OUTPUT``: a batch job from the command line.

The job directory (``--job-dir``, default ``OUTPUT.job``) makes the command
resumable: run it again after a crash and it continues where it stopped.
A run of ``--stop-after`` calls failing alike in a way no retry can fix
stops the job (exit status 1, the reason and the remedy on stderr); the same
command run after the fix sends what is left.
Progress is a live line on a terminal, JSON lines with ``--progress json``,
nothing otherwise (``--progress auto``). The summary goes to stderr and the
exit status is 1 when any item failed (they are in ``failures.jsonl``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import orjson
from pydantic import BaseModel

from laneway.batch import BatchJob, Progress, Tally, read_input
from laneway.batch.jobdir import FAILURES
from laneway.batch.outputs import open_writer
from laneway.batch.schema import schema_model
from laneway.batch.streak import STOP_AFTER
from laneway.client import Laneway
from laneway.core.errors import BatchStopped, LanewayError, RequestInvalid
from laneway.engine.structured import DEFAULT_REASKS

LINE_EVERY = 0.1
"""Seconds between redraws of the progress line."""
JSON_EVERY = 1.0
"""Seconds between ``--progress json`` lines."""
CLEAR_LINE = "\r\x1b[2K"


def parser() -> argparse.ArgumentParser:
    """The ``laneway batch`` arguments."""
    p = argparse.ArgumentParser(
        prog="laneway batch",
        description="Embed a corpus or run a prompt set on a lane: resumable, paced, verified.",
    )
    p.add_argument("lane")
    p.add_argument("input", type=Path, help="JSONL, CSV (with --column) or text, one item a line")
    p.add_argument("-o", "--output", type=Path, required=True, help=".jsonl, .parquet or .npy")
    p.add_argument("--config", default="laneway.yaml")
    p.add_argument("--job-dir", type=Path, help="checkpoint and manifest (default: OUTPUT.job)")
    p.add_argument("--input-format", choices=["jsonl", "csv", "text"])
    p.add_argument("--column", help="CSV: the column to embed or send as the prompt")
    p.add_argument("--id-column", help="CSV: the column holding each item's id")
    p.add_argument("--max-concurrency", type=int, help="cap on calls in flight")
    p.add_argument("--retry-failures", action="store_true", help="run the failed items again")
    p.add_argument(
        "--stop-after",
        type=int,
        default=STOP_AFTER,
        metavar="N",
        help=f"stop once N calls in a row fail alike in a way no retry can fix "
        f"(default {STOP_AFTER}; 0: never stop)",
    )
    p.add_argument("--progress", choices=["auto", "line", "json", "none"], default="auto")
    p.add_argument("--structured", type=Path, help="chat: a JSON schema every answer must match")
    p.add_argument("--reasks", type=int, default=DEFAULT_REASKS, help="re-asks per invalid answer")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="chat: a request parameter for every item, e.g. temperature=0",
    )
    return p


def main(argv: Sequence[str]) -> int:
    """Run ``laneway batch``; 0 when every item succeeded, 1 otherwise, 2 on bad use."""
    args = parser().parse_args(argv)
    if args.max_concurrency is not None and args.max_concurrency < 1:
        print("error: --max-concurrency must be at least 1", file=sys.stderr)
        return 2
    if args.stop_after < 0:
        print("error: --stop-after must be 0 (never stop) or more", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run(args))
    except LanewayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


async def run(args: argparse.Namespace) -> int:
    """Run the job the arguments describe and print its summary."""
    async with Laneway.from_config(args.config) as lw:
        kind = lw.engine.lane(args.lane, ready=False).kind
        writer = open_writer(args.output, kind)
        reporter = Reporter(args.progress, sys.stderr)
        stopped: BatchStopped | None = None
        try:
            job = build_job(lw, args, kind, reporter)
            async with contextlib.aclosing(job.results()) as results:
                async for result in results:
                    if result.ok:
                        writer.write(result)
        except BatchStopped as exc:
            writer.abandon()
            stopped = exc
        except BaseException:
            writer.abandon()
            raise
        finally:
            reporter.end()
        written = [] if stopped is not None else writer.close()
    print_summary(job, written, sys.stderr, stopped)
    return 1 if job.tally.failed or stopped is not None else 0


def build_job(lw: Laneway, args: argparse.Namespace, kind: str, reporter: Reporter) -> BatchJob:
    """The job: the input read, options from the arguments, progress to ``reporter``."""
    inputs = read_input(
        args.input, kind, fmt=args.input_format, column=args.column, id_column=args.id_column
    )
    job_dir = args.job_dir or args.output.with_name(f"{args.output.name}.job")
    schema = load_schema(args.structured) if args.structured is not None else None
    params = dict(parse_param(text) for text in args.param)
    return lw.batch(
        args.lane,
        inputs,
        job_dir=job_dir,
        progress=reporter.show,
        max_concurrency=args.max_concurrency,
        retry_failures=args.retry_failures,
        stop_after=args.stop_after,
        schema=schema,
        reasks=args.reasks,
        **params,
    )


def load_schema(path: Path) -> type[BaseModel]:
    """The ``--structured`` file as a model the re-ask ladder validates with."""
    try:
        schema = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise RequestInvalid("structured", f"{path}: {exc}") from exc
    return schema_model(schema, path.stem)


def parse_param(text: str) -> tuple[str, Any]:
    """``KEY=JSON`` (a value that is not JSON is taken as a string)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise RequestInvalid("param", f"{text!r}: write KEY=VALUE")
    try:
        return key, orjson.loads(value)
    except orjson.JSONDecodeError:
        return key, value


class Reporter:
    """Shows progress as the ``--progress`` mode says, throttled."""

    def __init__(self, mode: str, stream: TextIO) -> None:
        if mode == "auto":
            mode = "line" if stream.isatty() else "none"
        self.mode = mode
        self.stream = stream
        self.last = 0.0
        self.drawn = False

    def show(self, progress: Progress) -> None:
        """Draw (or print) ``progress`` unless one was shown moments ago."""
        now = time.monotonic()
        every = LINE_EVERY if self.mode == "line" else JSON_EVERY
        if self.mode == "none" or (now - self.last < every and not progress.final):
            return
        self.last = now
        if self.mode == "json":
            self.stream.write(orjson.dumps(progress.as_json()).decode() + "\n")
        else:
            self.stream.write(CLEAR_LINE + progress.line())
            self.drawn = True
        self.stream.flush()

    def end(self) -> None:
        """Finish the live line so the summary starts on its own."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


def print_summary(
    job: BatchJob, written: list[Path], stream: TextIO, stopped: BatchStopped | None = None
) -> None:
    """The job's summary: items, vectors verified, tokens, cost, files, failures, a stop."""
    tally: Tally = job.tally
    progress = job.progress(final=True)
    lines = []
    if job.jobdir is not None and job.jobdir.restarted is not None:
        lines.append(f"job directory {job.jobdir.path} started afresh: {job.jobdir.restarted}")
    lines += [
        f"lane {job.lane.name}: {tally.done} of {len(job.items)} items done, {tally.failed} failed"
        f" ({job.resumed} from the checkpoint) in {progress.elapsed:.1f}s"
    ]
    vectors = tally.vector_line()
    if vectors is not None:
        lines.append(vectors)
    lines += [tally.token_line(), tally.cost_line()]
    if stopped is not None:
        lines.append("output: not written (the job stopped before its end)")
    else:
        lines.append(f"output: {', '.join(str(path) for path in written)}")
    if job.jobdir is not None:
        lines.append(f"job directory: {job.jobdir.path}")
    if stopped is not None:
        lines.append(f"STOPPED: {stopped}")
    elif tally.failed:
        errors = ", ".join(f"{code} {count}" for code, count in sorted(tally.errors.items()))
        where = job.jobdir.path / FAILURES if job.jobdir is not None else "the results"
        lines.append(f"FAILED: {tally.failed} items ({errors}); listed in {where}")
        lines.append("rerun with --retry-failures to try them again")
    stream.write("\n".join(lines) + "\n")
