"""Budget alerts: each threshold once per period, as a log line and a POST to a loopback
webhook; off the request path, bounded, a failing webhook tried three times and logged."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from laneway.app.composer import build_gateway
from laneway.core.clock import FakeClock
from laneway.policy.budget import BudgetCap
from laneway.server.budget_alerts import ATTEMPTS, BudgetAlerts
from laneway.server.key_terms import KeyTerms, SpentBefore
from laneway.sim import RunningSim
from laneway.state.keys.ledger import KeyRefusal
from laneway.state.keys.memory import MemoryKeyLedger
from laneway.state.keys.redis_ledger import RedisKeyLedger
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.keys.test_team_budgets import PRICE
from tests.keys.webhook import receiver
from tests.server.support import HELLO, config, post, serve_app, source
from tests.state.conftest import redis_client, redis_prefix

__all__ = ["redis_client", "redis_prefix"]

DEC_3 = datetime(2026, 12, 3, 12, tzinfo=UTC).timestamp()
MONTH = BudgetCap("key:alice", "month", 10.0)
ALICE = KeyTerms("alice", budgets=(MONTH,))
SPENT = "key:alice:2026-12"
THRESHOLDS = (0.5, 0.8, 1.0)


def alert_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "laneway.alerts"]


async def test_each_threshold_alerts_once_a_period_in_the_log_and_the_webhook(caplog) -> None:
    clock = FakeClock(wall_start=DEC_3)
    caplog.set_level(logging.WARNING, logger="laneway.alerts")
    async with receiver() as hook:
        alerts = BudgetAlerts(THRESHOLDS, MemoryKeyLedger(clock), clock, webhook=hook.url)
        for spent in (4.0, 5.5, 6.0, 9.0, 9.5):
            alerts.spent(ALICE, {SPENT: spent}, {})
        alerts.refused(ALICE, KeyRefusal("monthly_budget", 10.0, 3600.0, 9.7))
        alerts.refused(ALICE, KeyRefusal("monthly_budget", 10.0, 3600.0, 9.7))
        await alerts.drained()
        clock.advance(31 * 86_400.0)  # January: a new period alerts again
        alerts.spent(ALICE, {"key:alice:2027-01": 5.0}, {})
        await alerts.drained()
        await alerts.aclose()
    assert [(b["threshold"], b["period_name"]) for b in hook.bodies] == [
        (0.5, "2026-12"),
        (0.8, "2026-12"),
        (1.0, "2026-12"),
        (0.5, "2027-01"),
    ]
    assert hook.bodies[1] == {
        "event": "budget_threshold",
        "owner": "key",
        "name": "alice",
        "key": "alice",
        "period": "month",
        "period_name": "2026-12",
        "threshold": 0.8,
        "budget_usd": 10.0,
        "spent_usd": 9.0,
        "refused": False,
        "at": "2026-12-03T12:00:00+00:00",
    }
    assert hook.bodies[2]["refused"] is True and hook.bodies[2]["spent_usd"] == 9.7
    lines = alert_lines(caplog)
    assert lines[0] == (
        "budget alert: key 'alice' reached 50% of its $10 monthly budget in 2026-12: "
        "$5.500000 spent"
    )
    assert lines[2].endswith("; it refuses calls") and len(lines) == 4


async def test_a_teams_alert_names_the_team_and_a_jump_alerts_the_highest(caplog) -> None:
    clock = FakeClock(wall_start=DEC_3)
    caplog.set_level(logging.WARNING, logger="laneway.alerts")
    week = BudgetCap("team:ml", "week", 100.0)
    own = BudgetCap("key:bob", "total", 4.0)
    bob = KeyTerms("bob", budgets=(own, week), team="ml")
    async with receiver() as hook:
        alerts = BudgetAlerts(THRESHOLDS, MemoryKeyLedger(clock), clock, webhook=hook.url)
        alerts.spent(bob, {"team:ml:2026-W49": 85.0, "key:bob:total": 1.3}, {"total": 0.6})
        await alerts.drained()
        alerts.spent(bob, {"team:ml:2026-W49": 86.0, "key:bob:total": 1.5}, {"total": 0.6})
        await alerts.drained()
        await alerts.aclose()
    assert [(b["owner"], b["name"], b["threshold"]) for b in hook.bodies] == [
        ("team", "ml", 0.8),
        ("key", "bob", 0.5),
    ], "50% of the team's week is not sent after 80%; bob's carried $0.60 counts"
    assert "team 'ml' (key 'bob') reached 80% of its $100 weekly budget" in alert_lines(caplog)[0]


async def test_a_teams_spend_from_before_laneway_counts_towards_its_alerts(caplog) -> None:
    clock = FakeClock(wall_start=DEC_3)
    week = BudgetCap("team:ml", "week", 100.0)
    bob = KeyTerms("bob", budgets=(week,), team="ml", team_spent=SpentBefore(60.0, DEC_3))
    async with receiver() as hook:
        alerts = BudgetAlerts(THRESHOLDS, MemoryKeyLedger(clock), clock, webhook=hook.url)
        alerts.spent(bob, {"team:ml:2026-W49": 25.0}, {})
        await alerts.drained()
        await alerts.aclose()
    assert [(b["owner"], b["name"], b["threshold"]) for b in hook.bodies] == [("team", "ml", 0.8)]


async def test_a_failing_webhook_is_tried_three_times_logged_and_the_next_alert_goes(
    caplog,
) -> None:
    clock = FakeClock(wall_start=DEC_3)
    caplog.set_level(logging.WARNING, logger="laneway.alerts")
    async with receiver() as hook:
        hook.status = 500
        ledger = MemoryKeyLedger(clock)
        alerts = BudgetAlerts(THRESHOLDS, ledger, clock, webhook=hook.url, retry_wait=0.01)
        alerts.spent(ALICE, {SPENT: 5.0}, {})
        await alerts.drained()
        hook.status = 200
        alerts.spent(ALICE, {SPENT: 8.0}, {})
        await alerts.drained()
        await alerts.aclose()
    assert hook.posts == ATTEMPTS + 1
    assert alerts.dropped == 1 and alerts.sent == 2
    failures = [line for line in alert_lines(caplog) if "webhook failed (answered 500)" in line]
    assert len(failures) == ATTEMPTS
    assert any(line.startswith("budget alerts: gave up posting") for line in alert_lines(caplog))


async def test_a_hung_webhook_blocks_no_call_and_the_queue_stays_bounded(caplog) -> None:
    clock = FakeClock(wall_start=DEC_3)
    caplog.set_level(logging.WARNING, logger="laneway.alerts")
    async with receiver() as hook:
        hook.hold = asyncio.Event()
        alerts = BudgetAlerts(
            THRESHOLDS, MemoryKeyLedger(clock), clock, webhook=hook.url, queue_size=2
        )
        for name in ("a", "b", "c", "d", "e"):  # no await between them: a call never waits
            cap = BudgetCap(f"key:{name}", "month", 1.0)
            alerts.spent(KeyTerms(name, budgets=(cap,)), {f"key:{name}:2026-12": 1.0}, {})
        assert alerts.dropped == 3
        await hook.wait_for(1)
        hook.hold.set()
        await alerts.drained()
        await alerts.aclose()
    assert [b["name"] for b in hook.bodies] == ["a", "b"]
    assert sum("the queue is full" in line for line in alert_lines(caplog)) == 1


async def test_two_replicas_on_redis_send_each_alert_once(redis_client, redis_prefix) -> None:
    clock = FakeClock(wall_start=DEC_3)
    async with receiver() as hook:
        replicas = [
            BudgetAlerts(
                THRESHOLDS,
                RedisKeyLedger.from_url(
                    "redis://127.0.0.1:6379/0", clock, prefix=redis_prefix, timeout=5
                ),
                clock,
                webhook=hook.url,
            )
            for _ in range(2)
        ]
        for alerts in replicas:
            alerts.spent(ALICE, {SPENT: 5.0}, {})
            await alerts.drained()
        for alerts in replicas:
            await alerts.aclose()
            await alerts.claims.aclose()
    assert hook.posts == 1
    assert sorted(a.sent for a in replicas) == [0, 1]


async def test_over_http_a_budget_spent_by_a_call_alerts_through_the_webhook(
    sim: RunningSim, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with receiver() as hook:
        lanes = {"a": {"sources": [source(sim, unique_spec(""), price=PRICE)]}}
        settings = config(
            lanes,
            admin_keys=[{"name": "ops", "key": "adm-secret"}],
            alerts={"webhook": "os.environ/ALERT_HOOK", "thresholds": [0.8]},
        )
        environ = {"ALERT_HOOK": hook.url}
        with serve_app(build_gateway(settings, environ, tmp_path)) as gw:
            body = {"name": "alice", "budget": {"amount": 1e-9, "period": "day"}}
            status, made = await admin(http, gw.url, "POST", "/admin/keys", body)
            assert status == 201
            headers = {"Authorization": f"Bearer {made['key']}"}
            chat = {"model": "a", "messages": HELLO}
            assert (await post(http, f"{gw.v1}/chat/completions", chat, **headers))[0] == 200
            await hook.wait_for(1)
    [alert] = hook.bodies
    assert (alert["name"], alert["period"], alert["threshold"]) == ("alice", "day", 0.8)
    assert alert["spent_usd"] > 1e-9 and made["key"] not in str(alert)
