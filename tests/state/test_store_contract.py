"""One contract, every store: the in-memory store and Redis answer alike.

Both run on a ``FakeClock`` (the Redis store takes its wall time from it), so
the windows, leases and logs are checked in virtual time, without sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from laneway.core.clock import FakeClock
from laneway.state import MemoryStore, RedisStore, SourceStore
from laneway.state.admission.base import LOG_SIZE, Ask, QuotaUse

LANE = "lane"
SOURCES = ["a", "b"]


@dataclass
class Subject:
    store: SourceStore
    clock: FakeClock

    async def admit(self, *asks: Ask):
        return await self.store.admit(LANE, SOURCES, asks)


@pytest.fixture(params=["memory", "redis"])
def subject(request) -> Subject:
    clock = FakeClock()
    if request.param == "memory":
        return Subject(MemoryStore(clock), clock)
    client = request.getfixturevalue("redis_client")
    prefix = request.getfixturevalue("redis_prefix")
    return Subject(RedisStore(client, clock, prefix=prefix), clock)


def ask(source: str = "a", ticket: str = "t1", **kw) -> Ask:
    return Ask(source, ticket, **kw)


async def test_rpm_grants_up_to_the_limit_then_says_how_long(subject: Subject) -> None:
    for n in range(3):
        assert (await subject.admit(ask(ticket=f"t{n}", rpm=3))).granted is not None
        subject.clock.advance(1.0)
    refused = await subject.admit(ask(ticket="t9", rpm=3))
    assert refused.granted is None
    [refusal] = refused.refusals
    assert (refusal.source, refusal.reason) == ("a", "quota")
    assert refusal.seconds == pytest.approx(57.0)
    subject.clock.advance(57.0)
    assert (await subject.admit(ask(ticket="t9", rpm=3))).granted is not None


async def test_settling_at_real_usage_frees_tokens(subject: Subject) -> None:
    big = ask(ticket="t1", tokens=600, tpm=1000)
    await subject.admit(big)
    assert (await subject.admit(ask(ticket="t2", tokens=600, tpm=1000))).granted is None
    await subject.store.settle(LANE, big, 30, "ok")
    assert (await subject.admit(ask(ticket="t2", tokens=600, tpm=1000))).granted is not None
    assert (await subject.admit(ask(ticket="t3", tokens=371, tpm=1000))).granted is None


async def test_a_failed_attempt_settles_at_zero_tokens_but_its_request_counts(subject) -> None:
    first = ask(ticket="t1", tokens=900, tpm=1000, rpm=2)
    await subject.admit(first)
    await subject.store.settle(LANE, first, 0, "failed")
    assert (await subject.admit(ask(ticket="t2", tokens=1000, tpm=1000, rpm=2))).granted
    assert not (await subject.admit(ask(ticket="t3", tokens=0, tpm=1000, rpm=2))).granted


async def test_release_returns_the_whole_reservation(subject: Subject) -> None:
    held = ask(ticket="t1", tokens=1000, tpm=1000, rpm=1)
    await subject.admit(held)
    await subject.store.release(LANE, held)
    assert (await subject.admit(ask(ticket="t2", tokens=1000, tpm=1000, rpm=1))).granted


async def test_the_first_ask_that_fits_is_granted(subject: Subject) -> None:
    await subject.admit(ask("a", "t0", rpm=1))
    answer = await subject.admit(ask("a", "t1", rpm=1), ask("b", "t1", rpm=1))
    assert answer.granted == ask("b", "t1", rpm=1)
    assert [r.source for r in answer.refusals] == ["a"]
    assert set(answer.records) == set(SOURCES)


async def test_one_probe_at_a_time_until_settled_or_expired(subject: Subject) -> None:
    probe = ask(ticket="p1", probe=5.0)
    assert (await subject.admit(probe)).granted == probe
    second = await subject.admit(ask(ticket="p2", probe=5.0))
    [refusal] = second.refusals
    assert (refusal.reason, refusal.seconds) == ("probe", pytest.approx(5.0))
    subject.clock.advance(5.0)
    assert (await subject.admit(ask(ticket="p3", probe=5.0))).granted is not None
    await subject.store.settle(LANE, ask(ticket="p3"), None, "ok")
    assert (await subject.admit(ask(ticket="p4", probe=5.0))).granted is not None


async def test_an_unprobed_ask_ignores_the_lease(subject: Subject) -> None:
    await subject.admit(ask(ticket="p1", probe=5.0))
    assert (await subject.admit(ask(ticket="panic"))).granted is not None


async def test_outcomes_are_logged_in_the_callers_time_and_capped(subject: Subject) -> None:
    start = subject.clock.now()
    for n in range(LOG_SIZE + 3):
        code = "ok" if n == 1 else "failed"
        record = await subject.store.settle(LANE, ask(ticket=f"t{n}"), None, code)
        subject.clock.advance(0.5)
    assert len(record.marks) == LOG_SIZE
    assert record.marks[-1].at == pytest.approx(start + 0.5 * (LOG_SIZE + 2), abs=1e-5)
    assert [m.at for m in record.marks] == sorted(m.at for m in record.marks)
    assert record.last_ok == pytest.approx(start + 0.5, abs=1e-5)
    admitted = await subject.admit()
    assert admitted.records["a"] == record
    assert admitted.records["b"].marks == ()


async def test_a_neutral_outcome_is_not_logged(subject: Subject) -> None:
    record = await subject.store.settle(LANE, ask(), None, None)
    assert record.marks == () and record.last_ok is None


async def test_peek_reads_records_and_quota_use_without_changing_them(subject: Subject) -> None:
    store = subject.store
    empty = await store.peek(LANE, SOURCES, [("a", 60.0)])
    assert empty.records["a"].marks == () and empty.quotas["a"] == QuotaUse(0, 0)
    first = ask(ticket="t1", tokens=100, rpm=5, tpm=1000)
    await subject.admit(first)
    await store.settle(LANE, first, 40, "failed")
    subject.clock.advance(30.0)
    await subject.admit(ask(ticket="t2", tokens=70, rpm=5, tpm=1000))
    peek = await store.peek(LANE, SOURCES, [("a", 60.0)])
    assert peek.quotas["a"] == QuotaUse(2, 110)
    assert [m.code for m in peek.records["a"].marks] == ["failed"]
    subject.clock.advance(31.0)
    assert (await store.peek(LANE, SOURCES, [("a", 60.0)])).quotas["a"] == QuotaUse(1, 70)
    again = await subject.admit(ask(ticket="t3", tokens=0, rpm=2))
    assert again.granted is not None, "peeking reserved nothing"
