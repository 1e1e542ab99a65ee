"""``laneway check`` on fallback chains: each chain's worst case, and lanes served by theirs.

A call walks its lane's chain (``laneway.engine.fallback``): each lane may
spend its own worst case before the next takes over, so a chain's worst case
is their sum, cut by the caller's deadline wherever it falls.

A streamed call hands over only before its first token: a lane gives up on
its openings after its retries of ``first_byte_timeout`` (or
``attempt_timeout``), but once content flows it may stream until its own
deadline, and then hands over only under ``continue_on_cut: restart``. Its
worst case is printed when it differs from the non-streamed one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from laneway.app import build_lane
from laneway.app.policies import retry_policy, worst_case
from laneway.config.models import ChatLaneConfig, LaneConfig, LanewayConfig, first_byte_timeout_of
from laneway.core.units import format_duration


def stream_worst_case(lanes: list[LaneConfig]) -> float:
    """The longest a streamed call can take down ``lanes``, the lanes of one chain in order.

    From the last lane back: a lane either fails every opening and hands
    over, or streams until its deadline and then ends, or, under ``restart``,
    is resumed by each later lane in turn, each streaming to its own deadline.
    """
    worst = resumed = 0.0
    for lane in reversed(lanes):
        opening = min(lane.per_attempt, first_byte_timeout_of(lane) or math.inf)
        handover = retry_policy(lane).worst_case(opening, lane.deadline)
        restarts = isinstance(lane, ChatLaneConfig) and lane.continue_on_cut == "restart"
        streamed = lane.deadline + (resumed if restarts else 0.0)
        worst = max(handover + worst, streamed)
        resumed += lane.deadline
    return worst


def chain_report(config: LanewayConfig, name: str) -> tuple[str, str]:
    """The lane's fallback chain with its worst case, and a warning when its caller gives
    up first (both empty when the lane falls back to nothing).

    Each lane of the chain may run its own worst case; the caller's deadline
    (``client_deadline`` of the first lane) cuts the chain wherever it falls.
    """
    chain = config.fallback_chain(name)
    if len(chain) == 1:
        return "", ""
    lanes = [config.lanes[lane] for lane in chain]
    worsts = [worst_case(lane) for lane in lanes]
    total = sum(worsts)
    parts = " -> ".join(
        f"{lane} ({format_duration(w)})" for lane, w in zip(chain, worsts, strict=True)
    )
    line = f"fallback {parts}: worst case {format_duration(total)}"
    streamed = stream_worst_case(lanes) if lanes[0].kind == "chat" else total
    if streamed != total:
        line += f"; streamed {format_duration(streamed)}"
    longest = max(total, streamed)
    client = config.lanes[name].client_deadline
    if client is None or longest <= client:
        return line, ""
    warning = (
        f"{name}: the fallback chain's worst case {format_duration(longest)} is longer than "
        f"client_deadline {format_duration(client)}: the caller's deadline cuts the chain"
    )
    return line, warning


def readiness_lines(config: LanewayConfig, environ: Mapping[str, str]) -> list[str]:
    """One line per lane that is not ready: the lane of its chain that answers instead, if any.

    (Why it is not ready is among the warnings: each unset variable.)
    """
    ready = {
        name: not build_lane(name, lane, environ).problems for name, lane in config.lanes.items()
    }
    lines = []
    for name in config.lanes:
        if ready[name]:
            continue
        via = next((other for other in config.fallback_chain(name) if ready[other]), None)
        if via is None:
            lines.append(f"not ready {name}: no lane of its chain is ready: calls are refused")
        else:
            lines.append(f"not ready {name}: its calls go to fallback lane {via}")
    return lines
