"""What a configuration reload keeps of the running engine's source states.

A reload builds new lanes from the new configuration. A source that is the
same upstream under the same settings as before (same state key in the same
store scope, same endpoint, model, key variable, limits and breaker) keeps
what this process knows of it: the store's quota window, outcome log (health,
breaker) and probe lease, and the lane memory's AIMD pacer, Retry-After mark
and last record. A source whose settings changed, or that is new, starts
fresh. Priority and weight are the lane's view of a source, not the source:
changing them keeps its state.

States are carried by reference, not copied, so a call still running on the
old configuration settles its slot and reservation where the new one counts.
Shared state (Redis) needs none of this: its keys are the same after a reload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from laneway.engine.lane import Lane, Source
from laneway.state import MemoryStore, SourceStore


@dataclass(frozen=True, slots=True)
class Carried:
    """Source states by outcome: ``kept`` from the old engine, ``fresh`` (changed or new)."""

    kept: tuple[str, ...]
    fresh: tuple[str, ...]


def carry_states(
    old: Mapping[str, Lane], new: Mapping[str, Lane], old_store: SourceStore, store: SourceStore
) -> Carried:
    """Give ``new`` lanes the states of their unchanged sources in ``old``.

    ``store`` is the new engine's: when it is another in-process store than
    ``old_store``, the unchanged sources' quota windows and logs move into it;
    when it is the same object (shared state), nothing needs to move there.
    """
    before = {(lane.scope, s.key): (lane, s) for lane in old.values() for s in lane.sources}
    kept: dict[tuple[str, str], None] = {}
    fresh: dict[str, None] = {}
    for lane in new.values():
        _share_waiters(lane, old)
        for source in lane.sources:
            found = before.get((lane.scope, source.key))
            if found is None or not same_upstream(found[1], source):
                fresh[source.key] = None
                continue
            _carry_memory(found[0], lane, source)
            kept[(lane.scope, source.key)] = None
            if source.quota_key != source.key:
                kept[(lane.scope, source.quota_key)] = None
    moving = store is not old_store  # a new local store: the states move into it
    if moving and isinstance(store, MemoryStore) and isinstance(old_store, MemoryStore):
        store.adopt(old_store, kept)
    return Carried(tuple(dict.fromkeys(key for _, key in kept)), tuple(fresh))


def same_upstream(old: Source, new: Source) -> bool:
    """Whether ``new`` is ``old`` under the same settings (see the module doc)."""
    return (
        old.quota_key == new.quota_key
        and old.quota == new.quota
        and old.pacing == new.pacing
        and old.breaker == new.breaker
        and old.config.upstream == new.config.upstream
    )


def _carry_memory(old_lane: Lane, lane: Lane, source: Source) -> None:
    """The lane memory's pacer, Retry-After mark and record of ``source``."""
    old, memory, key = old_lane.memory, lane.memory, source.key
    if key in old.pacers:
        memory.pacers[key] = old.pacers[key]
    if key in old.pushed_back:
        memory.pushed_back[key] = old.pushed_back[key]
    if key in old.records:
        memory.records[key] = old.records[key]


def _share_waiters(lane: Lane, old: Mapping[str, Lane]) -> None:
    """Wake the new lane's waiting picks when an old call frees a slot in the same scope.

    A carried pacer's slots are given back by calls of either configuration, so
    both must wake the same waiters.
    """
    for previous in old.values():
        if previous.scope == lane.scope:
            lane.memory.waiters = previous.memory.waiters
            return
