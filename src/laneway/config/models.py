"""The schema of ``laneway.yaml``. Every field is read somewhere; none is inert.

The whole file is ``LanewayConfig``, with ``state:``, ``telemetry:`` and
``cache:`` here; a lane is ``config.lanes``, an upstream ``config.sources``,
``server:`` ``config.server``, the field types ``config.fields``. This module
is the one import path of them all (``__all__``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BeforeValidator,
    Field,
    model_validator,
)

from laneway.config.describe import FieldError, Loc, did_you_mean
from laneway.config.fields import (
    Duration,
    MaybeNetworkUrl,
    NetworkUrl,
    Secret,
    Size,
    Strict,
)
from laneway.config.lanes import (
    BackoffConfig,
    ChatCacheConfig,
    ChatLaneConfig,
    EmbedLaneConfig,
    LaneConfig,
    OcrLaneConfig,
    fallback_lanes_of,
    first_byte_timeout_of,
)
from laneway.config.server import (
    AdminKeyConfig,
    AlertsConfig,
    BudgetConfig,
    CorsConfig,
    KeyConfig,
    ServerConfig,
)
from laneway.config.sources import (
    BreakerConfig,
    ConcurrencyConfig,
    DeploymentConfig,
    PriceConfig,
    QuotaGroupConfig,
    SourceConfig,
    UpstreamConfig,
    expand_deployments,
)

__all__ = [
    "AdminKeyConfig",
    "AlertsConfig",
    "BackoffConfig",
    "BreakerConfig",
    "BudgetConfig",
    "CacheConfig",
    "ChatCacheConfig",
    "ChatLaneConfig",
    "ConcurrencyConfig",
    "CorsConfig",
    "DeploymentConfig",
    "EmbedLaneConfig",
    "KeyConfig",
    "LaneConfig",
    "LanewayConfig",
    "OcrLaneConfig",
    "PriceConfig",
    "QuotaGroupConfig",
    "Secret",
    "ServerConfig",
    "SourceConfig",
    "StateConfig",
    "TelemetryConfig",
    "UpstreamConfig",
    "fallback_lanes_of",
    "first_byte_timeout_of",
]


class StateConfig(Strict):
    """Where admission state lives: in the process (no ``url``) or shared through Redis.

    ``fallback_share`` is the part of each quota a replica may spend while Redis
    is unreachable; unset, it is one over the replica count last seen in Redis.
    ``timeout`` bounds each Redis call (connect included): past it the call
    counts as an outage and the replica serves on its share.
    """

    url: NetworkUrl | None = Field(default=None, pattern=r"^(redis|rediss|unix)://")
    fallback_share: float | None = Field(default=None, gt=0, le=1)
    timeout: Duration = Field(default=0.5, gt=0, le=30)

    @model_validator(mode="after")
    def _share_needs_url(self) -> StateConfig:
        if self.fallback_share is not None and self.url is None:
            raise ValueError("fallback_share applies to a shared state.url only")
        if "timeout" in self.model_fields_set and self.url is None:
            raise ValueError("timeout applies to a shared state.url only")
        return self


def _telemetry_url(value: object) -> object:
    """``false`` (YAML) reads as ``none``: telemetry off."""
    return "none" if value is False else value


def _telemetry_short(value: object) -> object:
    """``telemetry: none`` (or ``false``, or a URL or path) is short for ``{url: ...}``."""
    return {"url": value} if isinstance(value, str) or value is False else value


class TelemetryConfig(Strict):
    """Where every call's record goes, and how it is batched there.

    ``url`` is a SQLite path (relative to the config file's folder, or
    ``sqlite:///path``), a ``postgresql://`` URL, or ``none``/``false`` to
    record nothing. ``telemetry: none`` (or any ``url`` alone) is short for
    ``telemetry: {url: none}``.
    """

    url: Annotated[MaybeNetworkUrl, BeforeValidator(_telemetry_url)] = "laneway.sqlite3"
    queue_size: int = Field(default=10_000, ge=1)
    batch_size: int = Field(default=200, ge=1)
    flush_interval: Duration = Field(default=1.0, gt=0)
    spool_bytes: Size = Field(default=256 * 1024 * 1024, ge=0)
    """Bound of the spool file that keeps rows through a database outage (0: no spool)."""
    spool_dir: str | None = Field(default=None, min_length=1)
    """Folder of the spool file (relative to the config's); default: the config's folder."""


class CacheConfig(Strict):
    """Where the embedding and response caches live.

    ``url`` is a SQLite path (relative to the config file's folder, or
    ``sqlite:///path``), ``:memory:``, or a ``redis://`` URL shared by every
    replica. Unset: ``laneway-cache.sqlite3`` beside the config file (in
    memory when the config came from no file). Opened only when used.
    """

    url: MaybeNetworkUrl | None = Field(default=None, min_length=1)


class LanewayConfig(Strict):
    """The whole file."""

    deployments: dict[str, DeploymentConfig] = Field(default_factory=dict)
    """Named upstreams lanes reference (``{deployment: name}``), each one shared state."""
    quota_groups: dict[str, QuotaGroupConfig] = Field(default_factory=dict)
    """Quotas shared by several upstreams (``quota_group: name`` on each)."""
    lanes: dict[str, LaneConfig] = Field(min_length=1)
    aliases: dict[str, str] = Field(default_factory=dict)
    """Other model names that reach a lane (``gpt-4o: engram-summarize``): callers keep
    the names they already send, without a copied lane."""
    server: ServerConfig = Field(default_factory=ServerConfig)
    state: StateConfig = Field(default_factory=StateConfig)
    telemetry: Annotated[TelemetryConfig, BeforeValidator(_telemetry_short)] = Field(
        default_factory=TelemetryConfig
    )
    cache: CacheConfig = Field(default_factory=CacheConfig)

    @model_validator(mode="before")
    @classmethod
    def _expand_deployments(cls, data: object) -> object:
        return expand_deployments(data)

    @model_validator(mode="after")
    def _quota_groups_exist(self) -> LanewayConfig:
        named: list[tuple[Loc, str | None]] = [
            (("deployments", n), d.quota_group) for n, d in self.deployments.items()
        ]
        for lane_name, lane in self.lanes.items():
            named += [
                (("lanes", lane_name, "sources", i), s.quota_group)
                for i, s in enumerate(lane.sources)
            ]
        for where, group in named:
            if group is not None and group not in self.quota_groups:
                known = did_you_mean(group, self.quota_groups)
                raise FieldError(
                    (*where, "quota_group"), f"names unknown quota group {group!r}{known}"
                )
        return self

    @model_validator(mode="after")
    def _keys_name_lanes(self) -> LanewayConfig:
        for i, key in enumerate(self.server.keys):
            for j, lane in enumerate(key.lanes):
                if lane != "*" and lane not in self.lanes:
                    known = did_you_mean(lane, self.lanes)
                    raise FieldError(
                        ("server", "keys", i, "lanes", j),
                        f"key {key.name} names unknown lane {lane!r}{known}",
                    )
        return self

    @model_validator(mode="after")
    def _fallbacks_name_lanes(self) -> LanewayConfig:
        for name, lane in self.lanes.items():
            for i, other in enumerate(fallback_lanes_of(lane)):
                where = ("lanes", name, "fallback_lanes", i)
                if other not in self.lanes:
                    known = did_you_mean(other, self.lanes)
                    raise FieldError(where, f"names unknown lane {other!r}{known}")
                if self.lanes[other].kind != lane.kind:
                    raise FieldError(
                        where, f"{other} is of kind {self.lanes[other].kind}, not {lane.kind}"
                    )
                if other == name:
                    raise FieldError(where, "a lane cannot fall back to itself")
        return self

    def fallback_chain(self, lane: str) -> list[str]:
        """``lane`` and the lanes its failures fall back to, in the order they are tried.

        A fallback lane's own ``fallback_lanes`` follow it (depth first); a lane
        already in the chain is not tried again.
        """
        chain: list[str] = []
        pending = [lane]
        while pending:
            name = pending.pop()
            if name not in chain:
                chain.append(name)
                pending.extend(reversed(fallback_lanes_of(self.lanes[name])))
        return chain

    @model_validator(mode="after")
    def _aliases_name_lanes(self) -> LanewayConfig:
        for alias, lane in self.aliases.items():
            if alias in self.lanes:
                raise FieldError(("aliases", alias), "a lane already has this name")
            if lane not in self.lanes:
                known = did_you_mean(lane, self.lanes)
                raise FieldError(("aliases", alias), f"names unknown lane {lane!r}{known}")
        return self

    def lane_of(self, model: str) -> str:
        """The lane a caller's model name reaches: an alias's lane, else the name itself."""
        return self.aliases.get(model, model)
