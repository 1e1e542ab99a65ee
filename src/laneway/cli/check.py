"""``laneway check``: what each lane's policy will do, before it does it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from laneway.accounting import Pricer, Rate
from laneway.app import build_lane
from laneway.app.policies import hedging, retry_policy, worst_case
from laneway.app.pricing import pricer_for
from laneway.cli.check_chains import chain_report, readiness_lines
from laneway.cli.check_walk import failing_walks as failing_walks  # tests/oracle reads it here
from laneway.cli.check_walk import unreached_warnings, walk_notes
from laneway.config.models import ChatLaneConfig, LaneConfig, LanewayConfig, Secret
from laneway.core.units import format_duration
from laneway.engine.lane import Lane
from laneway.policy.retry import RetryPolicy
from laneway.providers.limits import limits_of
from laneway.server.keys import KeyRing
from laneway.server.limit_refusals import chain_unpriced, unpriced_pairs

"""The ``retry_on`` classes after which a source is set aside for the call."""


@dataclass(frozen=True, slots=True)
class LaneReport:
    """One row of the check table, the lines under it, and the warnings for that lane."""

    lane: str
    row: list[str]
    warnings: list[str]
    notes: list[str]


@dataclass(frozen=True, slots=True)
class RequestBound:
    """The most upstream requests one call of a lane can make, and what they are."""

    once: int
    """The requests of one run of the call loop (the call, or one continuation)."""
    retries: int
    pushbacks: int
    context_moves: int
    continuations: int
    reasks: bool
    """Whether a continuation's attempt may be asked again without its refused prefill."""

    @property
    def total(self) -> int:
        """The call's run, then each continuation's (twice over with re-asks)."""
        return self.once * (1 + self.continuations * (2 if self.reasks else 1))

    def describe(self) -> str:
        """``1 attempt + 2 retries + 1 pushback``, times the continuations when there are any."""
        parts = ["1 attempt"]
        for count, what in (
            (self.retries, "retr"),
            (self.pushbacks, "pushback"),
            (self.context_moves, "move to a larger context_window"),
        ):
            if count:
                parts.append(f"{count} {_plural(what, count)}")
        once = " + ".join(parts)
        if len(parts) == 1:
            return f"{once} (no retries or pushbacks declared)"
        if not self.continuations:
            return once
        times = self.total // self.once
        continued = f"{self.continuations} {_plural('stream continuation', self.continuations)}"
        if self.reasks:
            continued += ", each attempt of one possibly asked again without its prefill"
        return f"({once}) x {times} (the call and {continued})"


def request_bound(lane: LaneConfig, policy: RetryPolicy) -> RequestBound:
    """The first attempt, retries, pushbacks, context moves, and stream continuations.

    A continuation (``continue_on_cut``) is a new run of the call loop, with
    the lane's whole retry policy, on the sources not yet tried that may
    continue (those that ``accepts_prefill``; any, with ``restart``, where a
    prefill source that refuses the prefill is asked again without it); a
    context move goes to a source with a larger declared ``context_window``.
    """
    windows = {s.context_window for s in lane.sources if s.context_window is not None}
    moves = max(len(windows) - 1, 0)
    once = policy.most_requests(context_moves=moves)
    continuations = _continuations(lane)
    restarts = isinstance(lane, ChatLaneConfig) and lane.continue_on_cut == "restart"
    reasks = restarts and any(s.accepts_prefill for s in lane.sources)
    return RequestBound(
        once, policy.most_retries(), policy.max_pushbacks, moves, continuations, reasks
    )


def _continuations(lane: LaneConfig) -> int:
    """The most continuations of a cut stream: one per source that may take one."""
    if not isinstance(lane, ChatLaneConfig) or not lane.continue_on_cut:
        return 0
    mode = lane.continue_on_cut
    takers = (
        len(lane.sources) if mode == "restart" else sum(s.accepts_prefill for s in lane.sources)
    )
    return min(takers, len(lane.sources) - 1)


HEADER = [
    "lane",
    "kind",
    "requests",
    "per-attempt",
    "backoff",
    "retry_on",
    "deadline",
    "worst case",
]


def lane_report(name: str, lane: LaneConfig, environ: Mapping[str, str]) -> LaneReport:
    """Describe one lane and list what will not work as declared."""
    policy = retry_policy(lane)
    per_attempt = lane.per_attempt
    worst = worst_case(lane)
    schedule = [policy.backoff.ceiling(n) for n in range(1, lane.retries + 1)]
    backoff = ", ".join(format_duration(s) for s in schedule) or "-"
    if lane.backoff.jitter != "none" and schedule:
        backoff += f" (jitter {lane.backoff.jitter})"
    bound = request_bound(lane, policy)
    row = [
        name,
        lane.kind,
        str(bound.total),
        format_duration(per_attempt),
        backoff,
        _retry_on(lane),
        format_duration(lane.deadline),
        format_duration(worst),
    ]
    notes = [f"requests {name}: at most {bound.total} = {bound.describe()}"]
    notes += hedge_notes(name, lane, bound.once)
    warnings = _warnings(name, lane, environ, worst)
    if len(lane.sources) > 1:
        if policy.most_retries():
            notes += walk_notes(name, lane, policy)
        warnings += unreached_warnings(name, lane, failing_walks(lane, policy))
    return LaneReport(name, row, warnings, notes)


def hedge_notes(name: str, lane: LaneConfig, once: int) -> list[str]:
    """The lane's hedge, its request bound (each attempt may start one) and worst case."""
    limits = hedging(lane)
    if limits is None:
        return []
    worst = retry_policy(lane).worst_case(lane.per_attempt + limits.limits.cap, lane.deadline)
    return [
        f"hedge {name}: {limits.limits.describe()}; at most {2 * once} = {once} attempts + "
        f"{once} hedges; worst case {format_duration(worst)}"
    ]


def _retry_on(lane: LaneConfig) -> str:
    """The retried classes, with each one's own count when the lane gives them."""
    listed = lane.retry_on
    if isinstance(listed, dict):
        return ", ".join(f"{label} x{count}" for label, count in listed.items())
    return ", ".join(str(label) for label in listed) or "-"


def _plural(word: str, count: int) -> str:
    if word == "retr":
        return "retry" if count == 1 else "retries"
    if word.startswith("move"):
        return word if count == 1 else word.replace("move", "moves", 1)
    return word if count == 1 else f"{word}s"


def _warnings(name: str, lane: LaneConfig, environ: Mapping[str, str], worst: float) -> list[str]:
    out: list[str] = []
    start = 0.0
    policy = retry_policy(lane)
    for retry in range(1, lane.retries + 1):
        start += lane.per_attempt + policy.backoff.ceiling(retry)
        if start + lane.min_attempt > lane.deadline:
            out.append(
                f"{name}: retry {retry} can never start when attempts run their full "
                f"{format_duration(lane.per_attempt)}: it would begin at "
                f"{format_duration(start)}, past the deadline {format_duration(lane.deadline)}"
            )
            break
    if lane.client_deadline is not None and lane.client_deadline < worst:
        out.append(
            f"{name}: client_deadline {format_duration(lane.client_deadline)} is shorter than "
            f"the lane's worst case {format_duration(worst)}: the caller gives up first"
        )
    if lane.per_attempt > lane.deadline:
        out.append(f"{name}: attempt_timeout is longer than the deadline; the deadline cuts it")
    out.extend(expressiveness_warnings(build_lane(name, lane, environ)))
    return out


def expressiveness_warnings(lane: Lane) -> list[str]:
    """One warning per source that cannot carry what another source of the lane can.

    A call using such a feature skips that source (it is listed in the
    attempts as ``unsupported``), so the lane has fewer fallbacks for it.
    """
    if lane.kind == "embed":
        return []
    limits = {source.name: limits_of(source.provider) for source in lane.sources}
    shared = set.intersection(*(set(found) for found in limits.values())) if limits else set()
    out = []
    for source, found in limits.items():
        own = [feature for feature in found if feature not in shared]
        if own:
            out.append(
                f"{lane.name}: sources differ in what they can carry: {source} cannot carry "
                f"{', '.join(own)}; calls using them skip it"
            )
    return out


SDK_DEFAULTS = (
    "requests under an SDK's default retries: the same (failed answers say "
    "x-should-retry: false once a lane called an upstream or spent its deadline)"
)
"""What ``check``'s bounds mean for a caller on SDK defaults (``laneway.policy.spent``)."""


def render(config: LanewayConfig, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """The table and the warnings for every lane, then for every unset variable."""
    reports = [lane_report(n, lane, environ) for n, lane in config.lanes.items()]
    rows = [HEADER, *(r.row for r in reports)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines += [note for r in reports for note in r.notes]
    lines += [SDK_DEFAULTS] if reports else []
    lines += deployment_lines(config) + alias_lines(config)
    chains = [chain_report(config, name) for name in config.lanes]
    lines += [line for line, _ in chains if line] + readiness_lines(config, environ)
    warnings = [w for r in reports for w in r.warnings] + [w for _, w in chains if w]
    return "\n".join(line.rstrip() for line in lines), warnings + variable_warnings(config, environ)


def variable_warnings(config: LanewayConfig, environ: Mapping[str, str]) -> list[str]:
    """Every variable the config names that is unset: each source's key, each server key.

    A source is listed even when its lane has another that runs: the lane
    works, but never on that source.
    """
    out = [
        f"{name}: {problem}"
        for name, lane in config.lanes.items()
        for source in build_lane(name, lane, environ).sources
        for problem in source.problems
    ]
    keys = KeyRing(config.server.keys, list(config.lanes), environ)
    out.extend(f"server.keys: {problem}" for problem in keys.problems)
    return out


def deployment_lines(config: LanewayConfig) -> list[str]:
    """One line per deployment and quota group: the lanes sharing it, and its limits."""
    users: dict[str, list[str]] = {name: [] for name in config.deployments}
    for lane_name, lane in config.lanes.items():
        for source in lane.sources:
            if source.deployment is not None and lane_name not in users[source.deployment]:
                users[source.deployment].append(lane_name)
    lines = []
    for name, deployment in config.deployments.items():
        lanes = ", ".join(users[name]) or "no lane (unused)"
        limits = _limits(deployment.rpm, deployment.tpm)
        group = f", quota group {deployment.quota_group}" if deployment.quota_group else ""
        lines.append(f"deployment {name}: {deployment.model}, lanes {lanes}; {limits}{group}")
    for name, group_config in config.quota_groups.items():
        members = [n for n, d in config.deployments.items() if d.quota_group == name]
        members += [
            f"{lane_name}/{source.name or source.model}"
            for lane_name, lane in config.lanes.items()
            for source in lane.sources
            if source.deployment is None and source.quota_group == name
        ]
        limits = _limits(group_config.rpm, group_config.tpm)
        lines.append(f"quota group {name}: {limits} shared by {', '.join(members) or 'nothing'}")
    return lines


def _limits(rpm: int | None, tpm: int | None) -> str:
    parts = [f"rpm {rpm}" if rpm else "", f"tpm {tpm}" if tpm else ""]
    return " ".join(p for p in parts if p) or "no quota"


def alias_lines(config: LanewayConfig) -> list[str]:
    """One line per alias: the model name callers send and the lane it reaches."""
    return [
        f"alias {alias} -> {lane} ({config.lanes[lane].kind})"
        for alias, lane in config.aliases.items()
    ]


def price_report(config: LanewayConfig, now: float) -> tuple[list[str], list[str], list[str]]:
    """One line per source saying which price applies, errors, and warnings.

    A source without a price is listed whatever its lane says: its calls will
    show their cost as unknown, never as $0. A lane with ``require_price``
    turns that into an error. A budgeted key will be refused on a lane with
    an unpriced source (unless ``allow_unpriced``): each such pair is a warning.
    """
    pricer = pricer_for(config)
    lines: list[str] = []
    errors: list[str] = []
    for lane, source in pricer.entries:
        rate = pricer.rate(lane, source, now)
        if rate is not None:
            lines.append(f"price {lane}/{source}: {_describe_rate(rate)}")
            continue
        lines.append(f"price {lane}/{source}: UNPRICED, cost will read n/a (set price: on it)")
        if config.lanes[lane].require_price:
            errors.append(f"{lane}: require_price is set but source {source} has no price")
    return lines, errors, budget_warnings(config, pricer)


def budget_warnings(config: LanewayConfig, pricer: Pricer) -> list[str]:
    """Which lanes are unpriced for which budgeted keys (their calls there are refused)."""
    unpriced: dict[str, list[str]] = {name: [] for name in config.lanes}
    for (lane, source), entry in pricer.entries.items():
        if entry is None:
            unpriced[lane].append(source)
    chains = {name: chain_unpriced(unpriced, config.fallback_chain(name)) for name in unpriced}
    return [
        f"server.keys: key {key} has a budget but lane {lane} has unpriced sources "
        f"({', '.join(sources)}): its calls there are refused (set price: on them, "
        "or allow_unpriced: true on the key)"
        for key, lane, sources in unpriced_pairs(config.server.keys, chains)
    ]


def _describe_rate(rate: Rate) -> str:
    parts = [f"input {rate.input.base:g}"]
    if rate.output is not None:
        parts.append(f"output {rate.output.base:g}")
    if rate.cached_input is not None:
        parts.append(f"cached {rate.cached_input.base:g}")
    if rate.cache_write is not None:
        parts.append(f"cache write {rate.cache_write.base:g}")
    kinds = (rate.input, rate.output, rate.cached_input, rate.cache_write)
    tiered = any(t is not None and t.tiers for t in kinds)
    return f"{', '.join(parts)} USD/Mtok{' (+tiers)' if tiered else ''} from {rate.origin}"


def env_example(config: LanewayConfig) -> str:
    """A ``.env.example``: every variable the config reads, under the places that read it."""
    places: dict[str, list[str]] = {}
    pooled: set[str] = set()

    def add(secret: Secret | None, where: str, each_key: bool = False) -> None:
        if secret is not None and secret.env is not None:
            places.setdefault(secret.env, []).append(where)
            if each_key:
                pooled.add(secret.env)

    for name, deployment in config.deployments.items():
        add(deployment.api_key, f"deployments.{name}", deployment.each_key)
    for lane_name, lane in config.lanes.items():
        for source, source_name in zip(lane.sources, lane.source_names(), strict=True):
            if source.deployment is None:
                add(source.api_key, f"lanes.{lane_name} source {source_name}", source.each_key)
    for key in config.server.keys:
        add(key.key, f"server.keys {key.name}")
    lines = [
        "# Every variable laneway.yaml reads (written by `laneway check --env-example`).",
        "# Copy to .env beside laneway.yaml and fill in; the process environment wins over it.",
    ]
    for variable, where in places.items():
        lines += ["", f"# {', '.join(where)}"]
        if variable in pooled:
            lines.append(
                f"# each_key: more keys as {variable}_2, {variable}_3, ... or a comma list"
            )
        lines.append(f"{variable}=")
    return "\n".join(lines) + "\n"
