"""LiteLLM's key and team rows translated to laneway keys and teams (pure: no database)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from laneway.migrate.litellm.key_budgets import Budget, budget, spend
from laneway.migrate.litellm.key_models import EVERY, Catalog, catalog, reach
from laneway.migrate.litellm.keys import (
    CarriedKey,
    KeysTranslation,
    LiteLLMRows,
    translate_keys,
)

ALL_PERIODS = ("day", "week", "month", "total")
NOW = 1_796_000_000.0
KNOWN = Catalog(
    lanes=("gpt-4o", "claude", "embed"),
    aliases={"gpt4": "gpt-4o"},
    groups={"beta": ("claude", "embed")},
    left_out=frozenset({"rerank"}),
)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def key_row(secret: str = "sk-one", **columns: Any) -> dict[str, Any]:
    return {"token": digest(secret), "key_name": f"sk-...{secret[-4:]}", **columns}


def one(rows: LiteLLMRows, periods: tuple[str, ...] = ALL_PERIODS) -> CarriedKey:
    out = translate_keys(rows, KNOWN, periods, NOW)
    assert len(out.keys) == 1, out.gaps
    return out.keys[0]


def report(out: KeysTranslation) -> str:
    return "\n".join(out.lines(out.gaps) + out.lines(out.changes))


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        ("1d", Budget(30.0, "day")),
        ("24h", Budget(30.0, "day")),
        ("daily", Budget(30.0, "day")),
        ("7d", Budget(30.0, "week")),
        ("1w", Budget(30.0, "week")),
        ("weekly", Budget(30.0, "week")),
        ("30d", Budget(30.0, "month")),
        ("1mo", Budget(30.0, "month")),
        ("monthly", Budget(30.0, "month")),
        ("30days", Budget(30.0, "month")),  # LiteLLM's _parse_duration reads the unit's letter
        (None, Budget(30.0, "total")),
    ],
)
def test_durations_laneway_has_carry_as_they_are(duration: str | None, expected: Budget) -> None:
    assert budget(30.0, duration, ALL_PERIODS) == expected


@pytest.mark.parametrize(
    ("duration", "amount", "period"),
    [
        ("14d", 30.0 / 14, "day"),  # no 14 days can spend more than LiteLLM allowed
        ("2w", 30.0 / 14, "day"),
        ("48h", 15.0, "day"),
        ("36h", 10.0, "day"),  # 36 h can touch 3 UTC days
        ("2mo", 15.0, "month"),
        ("12h", 30.0, "day"),  # shorter than a day: the same amount a day
        ("30m", 30.0, "day"),
        ("7d", 30.0 / 7, "day"),  # without week: a 7th a day
        ("fortnight", 30.0, "day"),  # LiteLLM resets what it cannot read at the next midnight
    ],
)
def test_other_durations_are_carried_stricter_and_say_so(
    duration: str, amount: float, period: str
) -> None:
    carried = budget(30.0, duration, ("day", "month"))
    assert isinstance(carried, Budget)
    assert carried.amount == pytest.approx(amount)
    assert carried.period == period
    assert carried.change is not None and duration in carried.change


def test_a_lifetime_budget_needs_total() -> None:
    assert isinstance(budget(30.0, None, ("day", "month")), str)


def test_spend_of_a_period_already_ended_is_not_carried() -> None:
    assert spend(4.0, NOW - 1, NOW)[0] == 0.0
    assert spend(4.0, NOW + 1, NOW) == (4.0, None)
    assert spend(4.0, None, NOW) == (4.0, None)


def test_a_key_carries_its_digest_alias_limits_budget_spend_expiry() -> None:
    row = key_row(
        key_alias="svc",
        models=["gpt4", "claude"],
        rpm_limit=60,
        tpm_limit=10_000,
        max_parallel_requests=4,
        max_budget=20.0,
        budget_duration="30d",
        spend=7.5,
        budget_reset_at=NOW + 3600,
        expires=NOW + 86_400,
        user_id="u1",
    )
    users = [{"user_id": "u1", "user_email": "a@example.com", "max_budget": None}]
    key = one(LiteLLMRows([row], [], users))
    assert (key.name, key.sha256, key.prefix) == ("svc", digest("sk-one"), "sk-...-one")
    limits = key.limits
    assert limits.lanes == ("gpt-4o", "claude")
    assert (limits.rpm, limits.tpm, limits.max_concurrency) == (60, 10_000, 4)
    assert (limits.budget, limits.period, key.spend) == (20.0, "month", 7.5)
    assert (key.expires_at, key.blocked, key.team) == (NOW + 86_400, False, None)
    assert key.metadata["litellm"] == {
        "key_alias": "svc",
        "user_id": "u1",
        "user_email": "a@example.com",
    }


@pytest.mark.parametrize(
    ("models", "team_models", "lanes"),
    [
        ([], None, EVERY),
        (["all-proxy-models"], None, EVERY),
        (["*"], None, EVERY),
        (["all-team-models"], None, EVERY),  # no team: every model
        (["all-team-models"], ["gpt-4o"], ("gpt-4o",)),
        ([], ["gpt4", "beta"], ("gpt-4o", "claude", "embed")),
        (["claude", "gpt-4o"], ["beta"], ("claude",)),  # what both allow
        (["beta"], None, ("claude", "embed")),  # an access group
        (["gpt-*"], None, ("gpt-4o",)),
        (["openai/*"], None, ("gpt-4o",)),  # gpt-4o's provider, as LiteLLM infers it
        (["no-default-models"], None, ()),
    ],
)
def test_models_map_to_lanes_as_litellm_reads_them(
    models: list[str], team_models: list[str] | None, lanes: tuple[str, ...]
) -> None:
    team = None if team_models is None else reach(team_models, KNOWN)
    assert reach(models, KNOWN, team).lanes == lanes


def test_a_key_whose_models_map_to_no_lane_is_reported_not_dropped() -> None:
    out = translate_keys(
        LiteLLMRows([key_row(key_alias="r", models=["rerank", "nope"])], []),
        KNOWN,
        ALL_PERIODS,
        NOW,
    )
    assert out.keys[0].limits.lanes == ()
    text = report(out)
    assert "model rerank (its model group imports to no lane): key r" in text
    assert "model nope (no model group, alias or access group of the config): key r" in text
    assert "no model of the key maps to a lane" in text


def test_a_team_brings_its_limits_budget_spend_and_bounds_its_keys() -> None:
    team = {
        "team_id": "t-1",
        "team_alias": "ml",
        "models": ["gpt-4o", "claude"],
        "rpm_limit": 10,
        "tpm_limit": 500,
        "max_budget": 100.0,
        "budget_duration": "1mo",
        "spend": 40.0,
        "organization_id": "o-1",
        "members": ["u1"],
    }
    row = key_row(team_id="t-1", rpm_limit=50, max_budget=500.0, budget_duration="30d")
    orgs = [{"organization_id": "o-1", "organization_alias": "Research", "models": ["claude"]}]
    out = translate_keys(LiteLLMRows([row], [team], [], orgs), KNOWN, ALL_PERIODS, NOW)
    carried = out.teams[0]
    assert (carried.name, carried.spend, carried.limits.rpm, carried.limits.budget) == (
        "ml",
        40.0,
        10,
        100.0,
    )
    assert carried.metadata["litellm"] == {
        "team_id": "t-1",
        "team_alias": "ml",
        "organization_id": "o-1",
        "organization_alias": "Research",
        "members": ["u1"],
    }
    assert "laneway bounds each of its keys by them: team ml" in report(out)
    assert "organization models and budget" in report(out) and "organization Research" in report(
        out
    )
    key = out.keys[0]
    assert key.team == "ml" and key.limits.lanes == ("gpt-4o", "claude")
    assert (key.limits.rpm, key.limits.tpm, key.limits.budget) == (10, 500, 100.0)


def test_a_zero_limit_refuses_every_call_so_the_key_comes_blocked() -> None:
    for columns in ({"rpm_limit": 0}, {"max_budget": 0.0}):
        assert one(LiteLLMRows([key_row("sk-zero", **columns)], [])).blocked


def test_keys_that_cannot_call_models_or_match_no_secret_are_not_imported() -> None:
    rows = [
        key_row("sk-mgmt", key_alias="admin", allowed_routes=["management_routes"]),
        {"token": "not-a-digest", "key_alias": "odd"},
        key_row("sk-llm", key_alias="llm", allowed_routes=["llm_api_routes"]),
    ]
    out = translate_keys(LiteLLMRows(rows, []), KNOWN, ALL_PERIODS, NOW)
    assert [k.name for k in out.keys] == ["llm"]
    text = report(out)
    assert "not imported (laneway's admin API has keys of its own): key admin" in text
    assert "not a sha256 digest" in text and "not-a-digest" not in text
    assert "allowed_routes: a laneway key may call every API of its lanes: key llm" in text


def test_what_is_not_carried_is_named_with_why_and_never_its_value() -> None:
    secret_setting = {"aws_secret_access_key": "AKIA-very-secret"}
    row = key_row(
        key_alias="k",
        model_max_budget={"gpt-4o": {"budget_limit": 1.0}},
        aliases={"x": "gpt-4o"},
        tpd_limit=1000,
        brand_new_column="x",
        metadata={"team": "payments", "secret_manager_settings": secret_setting, "tags": ["a"]},
    )
    out = translate_keys(LiteLLMRows([row], []), KNOWN, ALL_PERIODS, NOW)
    text = report(out)
    for column in ("model_max_budget", "aliases", "tpd_limit", "brand_new_column"):
        assert f"{column}: " in text
    assert "metadata secret_manager_settings, tags:" in text
    assert "AKIA" not in text and digest("sk-one") not in text
    assert out.keys[0].metadata["team"] == "payments"
    assert "secret_manager_settings" not in out.keys[0].metadata


def test_names_stay_unique_and_the_prefix_is_litellms_display_form() -> None:
    rows = [
        key_row("sk-aaaa", key_alias="svc", created_at=1.0),
        key_row("sk-bbbb", key_alias="svc", created_at=2.0),
        {"token": digest("sk-cccc"), "key_name": "custom"},
    ]
    out = translate_keys(LiteLLMRows(rows, []), KNOWN, ALL_PERIODS, NOW)
    assert [(k.name, k.prefix) for k in out.keys] == [
        ("sk-...", "sk-..."),
        ("svc", "sk-...aaaa"),
        ("svc #2", "sk-...bbbb"),
    ]


def test_the_catalog_reads_lanes_aliases_access_groups_and_left_out_groups() -> None:
    data = {
        "model_list": [
            {"model_name": "a", "model_info": {"access_groups": ["g"]}},
            {"model_name": "r", "model_info": {"access_groups": ["g"]}},
        ]
    }
    found = catalog({"lanes": {"a": {}}, "aliases": {"b": "a"}}, data)
    assert found == Catalog(("a",), {"b": "a"}, {"g": ("a",)}, frozenset({"r"}))


def test_a_litellm_reset_time_other_than_utc_midnight_is_said_for_each_budget() -> None:
    rows = LiteLLMRows(
        [key_row(key_alias="b", max_budget=5.0, budget_duration="1d"), key_row("sk-nob")], []
    )
    settings = {"timezone": "Asia/Kolkata", "budget_reset_time": "09:00"}
    out = translate_keys(rows, KNOWN, ALL_PERIODS, NOW, settings)
    assert out.changes == {
        "LiteLLM resets budgets at 09:00 Asia/Kolkata (litellm_settings.timezone, "
        "budget_reset_time); laneway's day, week and month begin at 00:00 UTC": ["key b"]
    }
    assert translate_keys(rows, KNOWN, ALL_PERIODS, NOW, {"timezone": "UTC"}).changes == {}
