"""``History``: the last hour of calls per lane and per source, in 10-second and minute buckets.

The status page (``GET /status``) plots it; ``Metrics.observe`` feeds it with
each finished call and the call's price, so it prices nothing itself. A call
lands in the bucket of the moment it ended. Per lane it counts calls, failed
calls (by error code), pushbacks, latency, time to first token, tokens and
cost, and the hedges its calls raced (``hedges_won``, ``hedges_lost``: the
hedge attempts that answered first, and those cancelled because the first
attempt did, as ``laneway_hedges_total`` counts them); per source it counts the
attempts sent there (``requests``), the failed ones (``errors``), their
pushbacks, hedges and latency, and the time to first token, tokens and cost of
the calls that source answered.

Cost on the request path is O(1) per call plus one step per attempt: no
locks, no sorting, a bucket allocated once per 10 s per series (and folded
into its minute a minute later). Memory is bounded: each series keeps the
last minute in 10-second buckets and the hour before in ``KEPT_MINUTES``
minute buckets; a latency figure is a count in one of ``LATENCY_BINS``
log-spaced bins (20 % apart), so percentiles are estimates within one bin's
width, and a bucket holds only the bins its calls used.

Buckets are plain numbers, so workers' histories add up (``merged``): under
``laneway serve --workers N`` each worker shares its own (``dump``) in its
metrics snapshot, and the answering worker adds the others' to its own when
a query asks. A dump serialises a minute bucket once, when it can no longer
change, so sharing costs little more than the last minute's buckets.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from laneway.core.records import CallRecord
from laneway.core.types import HEDGE_LOST, HEDGE_WON, NOT_FAILED, RACED

BUCKET_SECONDS = 10
"""Width of one bucket."""
SLOTS_PER_MINUTE = 60 // BUCKET_SECONDS
KEPT_MINUTES = 61
"""Minutes kept per series: the hour, and the minute under way."""
LATENCY_FLOOR = 0.001
"""Seconds at the bottom of the first latency bin; shorter figures count there."""
LATENCY_RATIO = 1.2
"""Each latency bin is this many times wider than the one before."""
LATENCY_BINS = 80
"""Bins from 1 ms to about 30 minutes; longer figures count in the last."""
LANE = ""
"""The source name of a lane's own series (all its calls)."""

_log = math.log
_PER_FLOOR = 1 / LATENCY_FLOOR
_PER_LOG_RATIO = 1 / math.log(LATENCY_RATIO)


def latency_bin(seconds: float) -> int:
    """The bin a latency figure counts in."""
    if seconds <= LATENCY_FLOOR:
        return 0
    index = int(_log(seconds * _PER_FLOOR) * _PER_LOG_RATIO)
    return index if index < LATENCY_BINS else LATENCY_BINS - 1


def bin_seconds(index: int) -> float:
    """The figure a bin stands for: its geometric middle."""
    return float(LATENCY_FLOOR * LATENCY_RATIO ** (index + 0.5))


@dataclass(slots=True)
class Bucket:
    """What one series saw during one bucket (or, merged, during a span of them)."""

    slot: int
    requests: int = 0
    errors: int = 0
    pushbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    hedges_won: int = 0
    hedges_lost: int = 0
    latency: dict[int, int] = field(default_factory=dict)
    ttft: dict[int, int] = field(default_factory=dict)
    error_codes: dict[str, int] = field(default_factory=dict)

    def add(self, other: Bucket) -> None:
        """Add ``other``'s counts to this bucket's."""
        self.requests += other.requests
        self.errors += other.errors
        self.pushbacks += other.pushbacks
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost += other.cost
        self.hedges_won += other.hedges_won
        self.hedges_lost += other.hedges_lost
        _add_counts(self.latency, other.latency)
        _add_counts(self.ttft, other.ttft)
        _add_counts(self.error_codes, other.error_codes)

    def as_list(self) -> list[Any]:
        """A compact JSON form (``dump``); ``Bucket.from_list`` reads it back."""
        return [
            self.slot,
            self.requests,
            self.errors,
            self.pushbacks,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost,
            list(self.latency.items()),
            list(self.ttft.items()),
            self.error_codes,
            self.hedges_won,
            self.hedges_lost,
        ]

    def add_list(self, data: list[Any]) -> None:
        """Add the counts of a bucket ``as_list`` wrote (another worker's)."""
        _, requests, errors, pushbacks, prompt, completion, cost, lat, ttft, codes = data[:10]
        won, lost = data[10:12] if len(data) >= 12 else (0, 0)  # a worker's older snapshot
        self.hedges_won += won
        self.hedges_lost += lost
        self.requests += requests
        self.errors += errors
        self.pushbacks += pushbacks
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cost += cost
        for into, pairs in ((self.latency, lat), (self.ttft, ttft)):
            for key, count in pairs:
                into[key] = into.get(key, 0) + count
        _add_counts(self.error_codes, codes)


def _add_counts(into: dict[Any, int], counts: Mapping[Any, int]) -> None:
    for key, count in counts.items():
        into[key] = into.get(key, 0) + count


def binned_quantile(counts: Mapping[int, int], q: float) -> float | None:
    """The ``q`` quantile (0 to 1) of binned figures, ``None`` when there are none."""
    total = sum(counts.values())
    if not total:
        return None
    rank = max(math.ceil(q * total), 1)
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen >= rank:
            return bin_seconds(index)
    return bin_seconds(max(counts))


class Series:
    """One lane's or source's hour: recent 10-second buckets, older ones folded into minutes.

    ``recent`` holds the buckets of the last ``SLOTS_PER_MINUTE`` slots seen;
    when a newer slot starts, older ones are added into ``minutes`` (their
    minute's bucket, whose ``slot`` is the minute's number), so a series holds
    at most about 66 buckets. A minute bucket no longer last in ``minutes``
    never changes again, and keeps its JSON form for ``dump``.
    """

    __slots__ = ("_frozen", "minutes", "recent")

    def __init__(self) -> None:
        self.recent: deque[Bucket] = deque()
        self.minutes: deque[Bucket] = deque(maxlen=KEPT_MINUTES)
        self._frozen: dict[int, orjson.Fragment] = {}

    def current(self, slot: int) -> Bucket:
        """The bucket for ``slot``: the newest one, or a new one after it.

        A call that ends in a slot already left behind (its record arrived
        late) counts in the newest bucket: it was observed then.
        """
        recent = self.recent
        if recent and recent[-1].slot >= slot:
            return recent[-1]
        while recent and recent[0].slot <= slot - SLOTS_PER_MINUTE:
            self._fold(recent.popleft())
        bucket = Bucket(slot)
        recent.append(bucket)
        return bucket

    def _fold(self, bucket: Bucket) -> None:
        minute = bucket.slot // SLOTS_PER_MINUTE
        minutes = self.minutes
        if not minutes or minutes[-1].slot < minute:
            if len(minutes) == minutes.maxlen:
                self._frozen.pop(minutes[0].slot, None)
            minutes.append(Bucket(minute))
        minutes[-1].add(bucket)

    def dump(self) -> list[Any]:
        """Minute buckets (those that can no longer change, serialised once), then recent ones."""
        minutes = list(self.minutes)
        out: list[Any] = []
        for bucket in minutes[:-1]:
            frozen = self._frozen.get(bucket.slot)
            if frozen is None:
                frozen = self._frozen[bucket.slot] = orjson.Fragment(orjson.dumps(bucket.as_list()))
            out.append(frozen)
        if minutes:
            out.append(minutes[-1].as_list())
        return [out, [b.as_list() for b in list(self.recent)]]


class History:
    """Per-(lane, source) series of the last hour; ``LANE`` as source is the lane's total.

    Queries take 10-second slot numbers (``int(wall // BUCKET_SECONDS)``) and
    minute numbers (``slot // SLOTS_PER_MINUTE``).
    """

    def __init__(self) -> None:
        self.series: dict[tuple[str, str], Series] = {}
        self._newest: dict[tuple[str, str], Bucket] = {}
        self._others: list[list[Any]] = []

    def observe(self, record: CallRecord, usd: float | None) -> None:
        """Count one finished call (``usd``: its price, when known).

        Written for the request path: each series' newest bucket is found with
        one dict lookup here (``_bucket`` only when a new slot starts), and the
        answering source's bucket is the last attempt's when they are the same
        source (the usual case).
        """
        lane = record.lane
        if not lane:
            return
        slot = int((record.time + record.latency) // BUCKET_SECONDS)
        newest = self._newest
        total = newest.get((lane, LANE))
        if total is None or total.slot < slot:
            total = self._bucket(lane, LANE, slot)
        total.requests += 1
        if record.error is not None:
            total.errors += 1
            total.error_codes[record.error] = total.error_codes.get(record.error, 0) + 1
        counts, index = total.latency, latency_bin(record.latency)
        counts[index] = counts.get(index, 0) + 1
        source = record.source
        answering: Bucket | None = None
        for attempt in record.attempts:
            bucket = newest.get((lane, attempt.source))
            if bucket is None or bucket.slot < slot:
                bucket = self._bucket(lane, attempt.source, slot)
            bucket.requests += 1
            counts, index = bucket.latency, latency_bin(attempt.elapsed)
            counts[index] = counts.get(index, 0) + 1
            if attempt.outcome not in NOT_FAILED:
                bucket.errors += 1
                codes = bucket.error_codes
                codes[attempt.outcome] = codes.get(attempt.outcome, 0) + 1
            if attempt.pushback:
                bucket.pushbacks += 1
                total.pushbacks += 1
            if attempt.outcome in RACED:
                _raced(total, bucket, attempt.outcome)
            if attempt.source == source:
                answering = bucket
        if not source:
            answering = None  # no source answered: the lane's total alone
        elif answering is None:
            answering = self._bucket(lane, source, slot)
        _answered(total, answering, record, usd)

    def names(self) -> set[tuple[str, str]]:
        """Every (lane, source) seen, here or in merged workers' histories."""
        return set(self.series) | {(lane, source) for lane, source, _ in self._others}

    def span(self, lane: str, source: str, first: int, last: int) -> Bucket:
        """The series' counts over the recent slots ``first`` to ``last``, both included.

        Only the last minute's slots are kept one by one; for older spans use ``points``.
        """
        merged = Bucket(last)
        series = self.series.get((lane, source))
        for bucket in () if series is None else series.recent:
            if first <= bucket.slot <= last:
                merged.add(bucket)
        for other_lane, other_source, (_, recent) in self._others:
            if (other_lane, other_source) == (lane, source):
                for data in recent:
                    if first <= data[0] <= last:
                        merged.add_list(data)
        return merged

    def points(self, lane: str, source: str, last_minute: int, count: int) -> list[Bucket]:
        """The series' counts per minute, ``count`` minutes ending with ``last_minute``."""
        first = last_minute - count + 1
        points = [Bucket(first + i) for i in range(count)]
        series = self.series.get((lane, source))
        if series is not None:
            for bucket in series.minutes:
                if first <= bucket.slot <= last_minute:
                    points[bucket.slot - first].add(bucket)
            for bucket in series.recent:
                minute = bucket.slot // SLOTS_PER_MINUTE
                if first <= minute <= last_minute:
                    points[minute - first].add(bucket)
        for other_lane, other_source, (minutes, recent) in self._others:
            if (other_lane, other_source) != (lane, source):
                continue
            for data in minutes:
                if first <= data[0] <= last_minute:
                    points[data[0] - first].add_list(data)
            for data in recent:
                minute = data[0] // SLOTS_PER_MINUTE
                if first <= minute <= last_minute:
                    points[minute - first].add_list(data)
        return points

    def dump(self) -> list[Any]:
        """Every series, JSON-ready (``orjson``), for the other workers (``merged``)."""
        return [[lane, source, s.dump()] for (lane, source), s in list(self.series.items())]

    def merged(self, dumps: Iterable[list[Any]]) -> History:
        """This history read together with other workers' ``dump``s (decoded JSON).

        Nothing is copied: the other workers' buckets are added up when a
        query asks for them.
        """
        view = History()
        view.series = self.series
        view._others = [entry for dump in dumps for entry in dump]
        return view

    def _bucket(self, lane: str, source: str, slot: int) -> Bucket:
        """The newest bucket of the series (a new one when ``slot`` is past it)."""
        key = (lane, source)
        newest = self._newest.get(key)
        if newest is not None and newest.slot >= slot:
            return newest
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = Series()
        newest = self._newest[key] = series.current(slot)
        return newest


def _raced(total: Bucket, source: Bucket, outcome: str) -> None:
    """A hedge race's attempt: a hedge that won or lost, counted to the lane and its source
    (a first attempt its hedge beat, ``cancelled``, is no hedge)."""
    if outcome == HEDGE_WON:
        total.hedges_won += 1
        source.hedges_won += 1
    elif outcome == HEDGE_LOST:
        total.hedges_lost += 1
        source.hedges_lost += 1


def _answered(total: Bucket, source: Bucket | None, record: CallRecord, usd: float | None) -> None:
    """Tokens, cost and time to first token of a call, to its lane's total and to the
    series of the source that answered it (``None``: no source did)."""
    usage = record.usage
    prompt, completion = usage.prompt_tokens or 0, usage.completion_tokens or 0
    ttft = None if record.ttfb is None else latency_bin(record.ttfb)
    for bucket in (total,) if source is None else (total, source):
        bucket.prompt_tokens += prompt
        bucket.completion_tokens += completion
        if usd is not None:
            bucket.cost += usd
        if ttft is not None:
            bucket.ttft[ttft] = bucket.ttft.get(ttft, 0) + 1
