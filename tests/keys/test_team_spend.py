"""A team's spend from before laneway (an imported LiteLLM team's) is kept apart from the
team's row: an admin's edit of the team leaves it, deleting the team takes it."""

from __future__ import annotations

from dataclasses import replace

from laneway.state.keys.records import AuditEntry, Limits, TeamRecord
from laneway.state.keys.store import KeyStore

AUDIT = AuditEntry(0.0, "test", "test", "test", None, None)


async def test_team_spend_survives_an_edit_and_goes_with_the_team(store: KeyStore) -> None:
    team = TeamRecord("ml", Limits(budget=10.0, period="month"), created_at=5.0, spend=4.5)
    await store.put_imported([team], [], [AUDIT])
    assert (await store.snapshot()).teams["ml"] == team
    await store.put_team(replace(team, blocked=True, spend=0.0), AUDIT)
    assert (await store.snapshot()).teams["ml"].spend == 4.5
    await store.delete_team("ml", AUDIT)
    await store.put_team(replace(team, spend=0.0), AUDIT)
    assert (await store.snapshot()).teams["ml"].spend == 0.0
