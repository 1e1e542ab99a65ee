"""An upstream in ``laneway.yaml``: a source written in a lane, a named deployment, its price,
concurrency, breaker and quota group; and the expansion of ``{deployment: name}`` entries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import (
    Field,
    model_validator,
)

from laneway.config.describe import FieldError, Loc, did_you_mean
from laneway.config.fields import (
    Duration,
    NetworkUrl,
    SecretField,
    Strict,
)


class PriceConfig(Strict):
    """A source's own price in USD per million tokens, over the genai-prices catalogue.

    ``output`` may be left out on embed lanes only (they produce no output
    tokens); ``cached_input`` (prompt-cache reads) and ``cache_write_input``
    (prompt-cache writes) left out price those prompt tokens at ``input``.
    """

    input: float = Field(ge=0)
    output: float | None = Field(default=None, ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write_input: float | None = Field(default=None, ge=0)


class ConcurrencyConfig(Strict):
    """A source's AIMD concurrency limit: it moves in [min, max], starting at ``initial``."""

    min: int = Field(default=1, ge=1)
    max: int = Field(ge=1)
    initial: int | None = Field(default=None, ge=1)
    cut_factor: float = Field(default=0.5, gt=0, lt=1)

    @model_validator(mode="after")
    def _ordered(self) -> ConcurrencyConfig:
        start = self.max if self.initial is None else self.initial
        if not self.min <= start <= self.max:
            raise ValueError("needs min <= initial <= max")
        return self


class BreakerConfig(Strict):
    """A lane's circuit breakers: ``failures`` within ``window`` open a source for ``cooldown``.

    ``failures`` is capped by the outcome log each source keeps (32 entries).
    """

    failures: int = Field(default=5, ge=1, le=32)
    window: Duration = 30.0
    cooldown: Duration = 10.0


class UpstreamConfig(Strict):
    """An upstream endpoint and its limits: a named deployment, or a source written inline."""

    provider: Literal["openai", "azure", "gemini", "anthropic"] = "openai"
    base_url: NetworkUrl = Field(pattern=r"^https?://")
    model: str
    """The model id; on ``azure`` sources, the deployment name."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Anthropic only: the output limit of calls that give none (Anthropic requires one)."""
    api_version: str | None = Field(default=None, pattern=r"^(v1|\d{4}-\d{2}-\d{2}(-preview)?)$")
    """Azure only: the ``api-version`` (default ``2024-10-21``), or ``v1`` for Azure's v1 API."""
    api_key: SecretField | None = None
    accepts_prefill: bool = False
    context_window: int | None = Field(default=None, gt=0)
    rpm: int | None = Field(default=None, gt=0)
    tpm: int | None = Field(default=None, gt=0)
    est_tokens: int | None = Field(default=None, gt=0)
    quota_group: str | None = Field(default=None, min_length=1)
    """The ``quota_groups`` entry whose rpm/tpm this upstream shares with others."""
    each_key: bool = False
    """One upstream per key ``api_key``'s variable holds (``NAME``, a comma list, then
    ``NAME_2``, ``NAME_3``...), each with its own quota and breaker."""
    concurrency: ConcurrencyConfig | None = None
    breaker: BreakerConfig | None = None
    """This upstream's own breaker; unset, the lane's."""
    price: PriceConfig | None = None

    @model_validator(mode="after")
    def _est_tokens_sizes_tpm(self) -> UpstreamConfig:
        if self.est_tokens is not None and self.tpm is None and self.quota_group is None:
            raise ValueError("est_tokens sizes the tpm reservation; it needs tpm")
        return self

    @model_validator(mode="after")
    def _each_key_needs_a_variable(self) -> UpstreamConfig:
        if self.each_key and (self.api_key is None or self.api_key.env is None):
            raise ValueError("each_key needs api_key: os.environ/NAME (the keys' variable)")
        return self

    @model_validator(mode="after")
    def _group_owns_quota(self) -> UpstreamConfig:
        if self.quota_group is not None and (self.rpm is not None or self.tpm is not None):
            raise ValueError(
                f"rpm and tpm belong to quota group {self.quota_group!r}; set them there"
            )
        return self

    @model_validator(mode="after")
    def _max_tokens_for_anthropic(self) -> UpstreamConfig:
        if self.max_tokens is not None and self.provider != "anthropic":
            raise ValueError("max_tokens applies to anthropic sources only")
        return self

    @model_validator(mode="after")
    def _api_version_for_azure(self) -> UpstreamConfig:
        if self.api_version is not None and self.provider != "azure":
            raise ValueError("api_version applies to azure sources only")
        return self


class DeploymentConfig(UpstreamConfig):
    """A named upstream (endpoint, key, model, limits) that lanes reference.

    Its quota, breaker, health, concurrency and Retry-After marks are one
    state, shared by every lane that names it (and every replica on Redis).
    """


class SourceConfig(UpstreamConfig):
    """One upstream a lane can call: written inline, or a deployment the lane names.

    ``deployment`` is set when the lane named one (``{deployment: name}``);
    the upstream's fields are then the deployment's, copied at load.
    """

    name: str | None = None
    priority: int = 0
    weight: float = Field(default=1.0, gt=0)
    deployment: str | None = None


class QuotaGroupConfig(Strict):
    """A quota several upstreams share (one account's limit over several models or keys)."""

    rpm: int | None = Field(default=None, gt=0)
    tpm: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _limits_something(self) -> QuotaGroupConfig:
        if self.rpm is None and self.tpm is None:
            raise ValueError("a quota group needs rpm or tpm")
        return self


LANE_SOURCE_KEYS = frozenset({"deployment", "name", "priority", "weight"})
"""What a lane may set where it names a deployment; the rest is the deployment's."""


def expand_deployments(data: object) -> object:
    """Replace each ``{deployment: name, ...}`` source with the deployment's fields.

    The lane keeps ``priority``, ``weight`` and ``name`` (default: the
    deployment's name); any other key there is an error, since the upstream
    and its limits are one shared thing.
    """
    if not isinstance(data, dict) or not isinstance(data.get("lanes"), dict):
        return data
    deployments = data.get("deployments") or {}
    if not isinstance(deployments, dict):
        return data
    lanes = {name: _expand_lane(name, lane, deployments) for name, lane in data["lanes"].items()}
    return {**data, "lanes": lanes}


def _expand_lane(name: str, lane: object, deployments: Mapping[str, object]) -> object:
    if not isinstance(lane, dict) or not isinstance(lane.get("sources"), list):
        return lane
    sources = [
        _expand_source(("lanes", name, "sources", i), s, deployments)
        for i, s in enumerate(lane["sources"])
    ]
    return {**lane, "sources": sources}


def _expand_source(where: Loc, source: object, deployments: Mapping[str, object]) -> object:
    if not isinstance(source, dict) or "deployment" not in source:
        return source
    named = source["deployment"]
    deployment = deployments.get(named) if isinstance(named, str) else None
    if not isinstance(deployment, dict):
        known = did_you_mean(str(named), map(str, deployments))
        raise FieldError((*where, "deployment"), f"names unknown deployment {named!r}{known}")
    extra = sorted(str(key) for key in source if key not in LANE_SOURCE_KEYS)
    if extra:
        raise FieldError(
            (*where, extra[0]),
            f"{', '.join(extra)} belong(s) to deployment {named!r}; a lane naming "
            "a deployment sets only priority, weight and name",
        )
    return {**deployment, "name": named, **source}
