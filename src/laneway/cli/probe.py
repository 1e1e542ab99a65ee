"""``laneway probe LANE``: one live call through the real engine, reported in full.

It answers what a lane change must know before it ships: which endpoint is
really called, what the request looks like (text and vectors redacted),
whether the upstream reported usage, what laneway recorded and what that
costs, and on embed lanes the length the upstream actually returns::

    OBSERVED len(embedding) = 3072
    DIMENSION VERDICT: MATCH

The request is fixed and non-sensitive. The probe bypasses the response and
embedding caches (a cached answer proves nothing about the upstream) and
records no telemetry. It exits non-zero on an error, a ``MISMATCH``, or an
embed lane whose vector length could not be measured.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from laneway.accounting import Pricer
from laneway.app import build_engine, open_transport
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
) -> tuple[list[str], int]:
    """Probe ``lane_name``; return the report lines and the exit status."""
    if lane_name not in config.lanes:
        return [f"error: unknown lane {lane_name!r}; lanes: {', '.join(config.lanes)}"], 1
    wire = RecordingTransport(transport or open_transport())
    records = Records()
    engine = build_engine(config, environ, transport=wire, observers=[records], fresh=True)
    try:
        lane = engine.lanes[lane_name]
        outcome = await _call(engine, lane)
    finally:
        await engine.aclose()
    record = records.records[-1] if records.records else None
    lines = [f"probe: lane {lane_name} ({lane.kind}), request text {PROBE_TEXT!r}"]
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
    pricer = Pricer.for_lanes(config.lanes)
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
    args = parser.parse_args(argv)
    try:
        config, environ = load_config(args.config)
    except LanewayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        lines, status = asyncio.run(probe(args.lane, config, environ))
    except LanewayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return status
