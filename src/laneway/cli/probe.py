"""``laneway probe LANE``: one live call through the real engine, reported in full.

It answers what a lane change must know before it ships: which endpoint is
really called, what the request looks like (text and vectors redacted),
whether the upstream reported usage, what laneway recorded and what that
costs, and on embed lanes the length the upstream actually returns::

    OBSERVED len(embedding) = 3072
    DIMENSION VERDICT: MATCH

``--source NAME`` probes that one source of the lane alone (no other source,
no fallback lane can answer for it); ``--each-source`` probes every source
that way, one report each, and exits non-zero when any of them failed: a dead
primary no longer probes as a success through the source behind it.

The request is fixed and non-sensitive. The probe bypasses the response and
embedding caches (a cached answer proves nothing about the upstream) and
records no telemetry. It exits non-zero on an error, a ``MISMATCH``, or an
embed lane whose vector length could not be measured.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from laneway.app import build_engine, open_transport
from laneway.app.pricing import pricer_for
from laneway.cli._wire import (
    RecordedExchange,
    RecordingTransport,
    Records,
    body_json,
    describe_usage,
    redact,
    safe_url,
)
from laneway.config.load import load_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import AttemptFailure, LanewayError
from laneway.core.records import CallRecord
from laneway.core.transport import HttpResponse, Transport
from laneway.core.types import ChatRequest, EmbedRequest, Usage
from laneway.core.vectors import vector_length
from laneway.engine.gateway import Engine
from laneway.engine.lane import Lane, Source
from laneway.engine.ocr import SAMPLE_PNG

PROBE_TEXT = "laneway probe: fixed non-sensitive string"
PASSING_VERDICTS = frozenset({"DIMENSION VERDICT: MATCH", "DIMENSION VERDICT: NOT PINNED"})
"""Verdicts that let the probe exit 0; ``MISMATCH`` and ``NOT MEASURED`` do not."""


@dataclass(slots=True)
class Outcome:
    """What the probe call gave: an error, and for embed lanes the vector lengths."""

    error: str | None = None
    lengths: list[int] | None = None


async def probe(
    lane_name: str,
    config: LanewayConfig,
    environ: Mapping[str, str],
    transport: Transport | None = None,
    source: str | None = None,
) -> tuple[list[str], int]:
    """Probe ``lane_name`` (only its ``source`` when named); the report lines and exit status."""
    if lane_name not in config.lanes:
        return [f"error: unknown lane {lane_name!r}; lanes: {', '.join(config.lanes)}"], 1
    wire = RecordingTransport(transport or open_transport())
    records = Records()
    engine = build_engine(config, environ, transport=wire, observers=[records], fresh=True)
    try:
        lane = engine.lanes[lane_name]
        if source is not None:
            if source not in lane.named:
                names = ", ".join(lane.source_names)
                return [f"error: lane {lane_name} has no source {source!r}; sources: {names}"], 1
            lane = engine.lanes[lane_name] = alone(lane, lane.named[source])
        outcome = await _call(engine, lane)
    finally:
        await engine.aclose()
    record = records.records[-1] if records.records else None
    alone_text = "" if source is None else f", source {source} alone"
    lines = [f"probe: lane {lane_name} ({lane.kind}{alone_text}), request text {PROBE_TEXT!r}"]
    lines += _wire_lines(wire.exchanges)
    lines += _usage_lines(lane, wire.exchanges, record)
    lines += _cost_lines(config, record, outcome)
    status = 1 if outcome.error else 0
    if outcome.error:
        lines.append(f"error: {outcome.error}")
    if lane.kind == "embed":
        lines += _verdict(lane, _observed(lane, wire.exchanges, outcome))
        if lines[-1] not in PASSING_VERDICTS:
            status = 1
    return lines, status


def alone(lane: Lane, source: Source) -> Lane:
    """``lane`` with ``source`` as its only source and no fallback lanes."""
    config = dataclasses.replace(lane.config, fallback_lanes=())
    return dataclasses.replace(lane, config=config, sources=[source])


async def probe_each(
    lane_name: str, config: LanewayConfig, environ: Mapping[str, str]
) -> tuple[list[str], int]:
    """Probe every source of ``lane_name`` alone; non-zero when any failed, with a summary."""
    if lane_name not in config.lanes:
        return [f"error: unknown lane {lane_name!r}; lanes: {', '.join(config.lanes)}"], 1
    names = config.lanes[lane_name].source_names()
    lines: list[str] = []
    failed: list[str] = []
    for name in names:
        report, status = await probe(lane_name, config, environ, source=name)
        lines += [*report, ""]
        if status:
            failed.append(name)
    verdict = f"FAILED: {', '.join(failed)}" if failed else "all answered"
    lines.append(f"sources of lane {lane_name}: {len(names)} probed, {verdict}")
    return lines, 1 if failed else 0


async def _call(engine: Engine, lane: Lane) -> Outcome:
    try:
        if lane.kind == "embed":
            answer = await engine.embed(lane.name, EmbedRequest([PROBE_TEXT]))
            return Outcome(lengths=[len(vector) for vector in answer.vectors])
        if lane.kind == "ocr":
            await engine.ocr(lane.name, SAMPLE_PNG, mime_type="image/png")
            return Outcome()
        await engine.chat(lane.name, ChatRequest([{"role": "user", "content": PROBE_TEXT}]))
    except LanewayError as exc:
        return Outcome(error=str(exc))
    return Outcome()


def _wire_lines(exchanges: list[RecordedExchange]) -> list[str]:
    if not exchanges:
        return ["endpoint: none called"]
    lines = []
    for exchange in exchanges:
        answer = exchange.response
        got = f"HTTP {answer.status}" if answer is not None else "no answer"
        lines.append(
            f"endpoint: {exchange.request.method} {safe_url(exchange.request.url)} -> {got}"
        )
    last = exchanges[-1]
    lines.append(f"request body: {orjson.dumps(redact(body_json(last.request.body))).decode()}")
    if last.response is not None:
        body = body_json(last.response.body)
        keys = ", ".join(body) if isinstance(body, dict) else "(not a JSON object)"
        lines.append(f"answer keys: {keys}")
    return lines


def _usage_lines(
    lane: Lane, exchanges: list[RecordedExchange], record: CallRecord | None
) -> list[str]:
    parsed = _parsed_usage(lane, exchanges)
    if parsed is None:
        reported = "not known (no answer could be read)"
    else:
        reported = "YES" if parsed.known else "NO (unknown, never counted as 0)"
    recorded = describe_usage(record.usage) if record is not None else "none (no call recorded)"
    return [f"upstream returned usage: {reported}", f"laneway recorded usage: {recorded}"]


def _cost_lines(config: LanewayConfig, record: CallRecord | None, outcome: Outcome) -> list[str]:
    if record is None or outcome.error:
        return ["cost: not computed (the call failed)"]
    pricer = pricer_for(config)
    cost = pricer.cost(record)
    rate = pricer.rate(record.lane, record.source, record.time)
    origin = rate.origin if rate is not None else "no price for this source (set price: on it)"
    if cost.usd is None:
        return [f"cost: unknown ({cost.status}; price: {origin})"]
    return [f"cost: ${cost.usd:.10f} ({cost.status}; price from {origin})"]


def _verdict(lane: Lane, lengths: list[int] | None) -> list[str]:
    expected = lane.config.dimensions
    pin = f"{expected} (the lane's dimensions pin)" if expected else "none (no dimensions pin)"
    lines = [f"expected len(embedding): {pin}"]
    if not lengths:
        return [*lines, "OBSERVED len(embedding) = not measured", "DIMENSION VERDICT: NOT MEASURED"]
    lines.append(f"OBSERVED len(embedding) = {lengths[0]}")
    if len(set(lengths)) > 1:
        lines.append(f"vectors of one answer differ in length: {sorted(set(lengths))}")
    if expected is None:
        return [*lines, "DIMENSION VERDICT: NOT PINNED"]
    match = all(length == expected for length in lengths)
    return [*lines, f"DIMENSION VERDICT: {'MATCH' if match else 'MISMATCH'}"]


def _observed(lane: Lane, exchanges: list[RecordedExchange], outcome: Outcome) -> list[int] | None:
    """Vector lengths: from the answer, or read off the wire when the engine refused it."""
    if outcome.lengths is not None:
        return outcome.lengths
    found = _last_answer(lane, exchanges)
    if found is None:
        return None
    source, answer = found
    try:
        return [vector_length(v) for v in source.provider.parse_embed(answer, 0.0).vectors]
    except AttemptFailure:
        return None


def _parsed_usage(lane: Lane, exchanges: list[RecordedExchange]) -> Usage | None:
    """The usage in the last answer as the adapter reads it (before any estimate)."""
    found = _last_answer(lane, exchanges)
    if found is None:
        return None
    source, answer = found
    try:
        if lane.kind == "embed":
            return source.provider.parse_embed(answer, 0.0).usage
        return source.provider.parse_chat(answer, 0.0).usage
    except AttemptFailure:
        return None


def _last_answer(
    lane: Lane, exchanges: list[RecordedExchange]
) -> tuple[Source, HttpResponse] | None:
    """The last answer received, with the source whose adapter built its request."""
    for exchange in reversed(exchanges):
        if exchange.response is not None:
            source = _source_of(lane, exchange.request.url)
            return None if source is None else (source, exchange.response)
    return None


def _source_of(lane: Lane, url: str) -> Source | None:
    for source in lane.sources:
        if lane.kind == "embed":
            built = source.provider.embed_request(EmbedRequest([PROBE_TEXT]))
        else:
            built = source.provider.chat_request(ChatRequest([]), stream=False)
        if built.url == url:
            return source
    return None


def main(argv: Sequence[str]) -> int:
    """``laneway probe LANE [--config laneway.yaml]``."""
    parser = argparse.ArgumentParser(
        prog="laneway probe", description="One live call on a lane, reported in full."
    )
    parser.add_argument("lane")
    parser.add_argument("--config", default="laneway.yaml")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--source", help="probe this source of the lane alone (its name)")
    which.add_argument(
        "--each-source", action="store_true", help="probe every source alone; non-zero if any fails"
    )
    args = parser.parse_args(argv)
    try:
        config, environ = load_config(args.config)
    except LanewayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        if args.each_source:
            lines, status = asyncio.run(probe_each(args.lane, config, environ))
        else:
            lines, status = asyncio.run(probe(args.lane, config, environ, source=args.source))
    except LanewayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return status
