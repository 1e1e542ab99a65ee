"""The schema of ``laneway.yaml``. Every field is read somewhere; none is inert."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from laneway.config.describe import FieldError, Loc, did_you_mean
from laneway.config.hedging import HedgeConfig
from laneway.core.failures import REJECTION_STATUSES, FailureKind, parse_retry_class
from laneway.core.units import parse_duration, parse_size

Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
RetryLabel = int | FailureKind
RetryCount = Annotated[int, Field(ge=1, le=20)]

_NETWORK_SCHEMES = frozenset({"http", "https", "redis", "rediss", "postgresql", "postgres"})


def network_url(url: str) -> str:
    """``url`` if it is well formed: a host for network schemes, a port in 1-65535.

    Checked where the config is read, so ``laneway check`` and ``laneway
    serve`` refuse a bad URL with the same message, before anything connects.
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r}: the port must be a number from 1 to 65535") from exc
    if parts.scheme in _NETWORK_SCHEMES and not parts.hostname:
        raise ValueError(f"{url!r}: names no host")
    if port == 0:
        raise ValueError(f"{url!r}: the port must be a number from 1 to 65535")
    return url


def _maybe_network_url(url: str) -> str:
    """A path or ``none`` passes as it is; a URL with a scheme is checked (``network_url``)."""
    return network_url(url) if "://" in url else url


NetworkUrl = Annotated[str, AfterValidator(network_url)]
MaybeNetworkUrl = Annotated[str, AfterValidator(_maybe_network_url)]

_ENV_REF = re.compile(r"^(?:os\.environ/([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\})$")


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret: a reference to an environment variable, or a literal value.

    ``repr`` never shows a literal, so a secret cannot leak through logs.
    """

    env: str | None = None
    literal: str | None = None

    @classmethod
    def parse(cls, text: object) -> Secret:
        """Read ``os.environ/NAME``, ``${NAME}`` or a literal string."""
        if isinstance(text, Secret):
            return text
        if not isinstance(text, str) or not text:
            raise ValueError("a secret must be a non-empty string")
        match = _ENV_REF.match(text)
        if match is None:
            return cls(literal=text)
        return cls(env=match.group(1) or match.group(2))

    def resolve(self, environ: Mapping[str, str]) -> str | None:
        """The secret's value, or ``None`` when its variable is unset or empty."""
        if self.literal is not None:
            return self.literal
        assert self.env is not None
        return environ.get(self.env) or None

    def __repr__(self) -> str:
        return f"Secret(env={self.env!r})" if self.env else "Secret(<literal>)"


SecretField = Annotated[Secret, BeforeValidator(Secret.parse)]


def _retry_label(label: object) -> int | FailureKind:
    """One ``retry_on`` entry: an HTTP status, or a retried ``FailureKind`` named as itself."""
    if isinstance(label, int) and not isinstance(label, bool):
        return label
    if isinstance(label, str) and label.isdigit():
        return int(label)
    if isinstance(label, str):
        return parse_retry_class(label)
    raise ValueError(f"{label!r} is neither an HTTP status nor a failure kind")


def _retry_labels(value: object) -> object:
    """``retry_on`` with every entry read by ``_retry_label``: one clear error per bad entry."""
    if isinstance(value, list):
        return [_retry_label(label) for label in value]
    if isinstance(value, dict):
        return {_retry_label(label): count for label, count in value.items()}
    return value


class Strict(BaseModel):
    """Base of every config model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class BackoffConfig(Strict):
    """The sleep between retries (see ``laneway.policy.backoff``)."""

    kind: Literal["constant", "exponential"] = "constant"
    base: Duration = 1.0
    cap: Duration = 8.0
    jitter: Literal["none", "full", "equal"] = "none"


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


class ChatCacheConfig(Strict):
    """A chat or OCR lane's response cache (``laneway.engine.response_cache``).

    A lane caches only when it declares ``cache:``. ``ttl``: how long an answer
    is kept (required: a cache is a decision about staleness). ``when``:
    ``always`` caches every request, ``temperature0`` only those sent with
    ``temperature: 0``.
    """

    ttl: Duration = Field(gt=0)
    when: Literal["always", "temperature0"] = "always"

    @model_validator(mode="before")
    @classmethod
    def _no_enabled(cls, data: object) -> object:
        if isinstance(data, dict) and "enabled" in data:
            raise ValueError(
                "cache.enabled is gone: a lane caches only when it declares "
                "cache: {ttl: 1h} (add when: temperature0 to cache temperature-0 requests only); "
                "leave cache out for none"
            )
        return data


def _no_cache(value: object) -> object:
    """``cache: false`` (YAML) reads as no cache, like leaving the key out."""
    return None if value is False else value


PROVIDER_KINDS: dict[str, tuple[str, ...]] = {
    "openai": ("chat", "embed", "ocr"),
    "azure": ("chat", "embed", "ocr"),
    "gemini": ("chat", "embed", "ocr"),
    "anthropic": ("chat", "ocr"),
}
"""The lane kinds each wire format serves: Anthropic has no embeddings API. OCR
sends the document as an image part (PDFs too), which every format carries."""

_KIND_ONLY: dict[str, tuple[str, ...]] = {
    "prompt": ("ocr",),
    "max_batch_items": ("embed",),
    "max_response_bytes": ("embed",),
    "batch_concurrency": ("embed",),
    "embed_cache": ("embed",),
    "max_inputs": ("embed",),
    "max_input_bytes": ("embed",),
    "max_answer_bytes": ("embed",),
    "cache": ("chat", "ocr"),
    "fallback_lanes": ("chat", "embed"),
}
"""Lane fields that act on some kinds only; setting one elsewhere is an error."""


class LaneConfig(Strict):
    """A named route: its sources and its enforced call policy."""

    kind: Literal["chat", "embed", "ocr"] = "chat"
    deadline: Duration = 60.0
    attempt_timeout: Duration | None = None
    retries: int = Field(default=0, ge=0, le=20)
    retry_on: Annotated[
        list[RetryLabel] | dict[RetryLabel, RetryCount], BeforeValidator(_retry_labels)
    ] = Field(default_factory=list)
    backoff: BackoffConfig = Field(default_factory=BackoffConfig)
    min_attempt: Duration = 0.25
    max_pushback_wait: Duration = 30.0
    max_pushbacks: int = Field(default=0, ge=0, le=20)
    client_deadline: Duration | None = None
    first_byte_timeout: Duration | None = None
    idle_timeout: Duration | None = None
    continue_on_cut: bool | Literal["restart"] = False
    dimensions: int | None = Field(default=None, gt=0)
    breaker: BreakerConfig = Field(default_factory=BreakerConfig)
    stall_after: Duration | None = None
    estimate_missing_usage: bool = False
    require_price: bool = False
    prompt: str | None = Field(default=None, min_length=1)
    max_batch_items: int = Field(default=64, ge=1)
    max_response_bytes: Size = Field(default=32 * 1024 * 1024, ge=1024)
    batch_concurrency: int = Field(default=4, ge=1, le=64)
    embed_cache: bool = False
    max_inputs: int = Field(default=2048, ge=1)
    """Texts one embeddings request may hold (OpenAI's own limit); more is a 413."""
    max_input_bytes: Size = Field(default=2 * 1024 * 1024, ge=1)
    """UTF-8 bytes of all the texts of one embeddings request; more is a 413."""
    max_answer_bytes: Size = Field(default=64 * 1024 * 1024, ge=1024)
    """The whole embeddings answer, estimated before any upstream call when the vector
    length is known (the lane's ``dimensions`` or the request's); more is a 413."""
    cache: Annotated[ChatCacheConfig | None, BeforeValidator(_no_cache)] = None
    hedge: HedgeConfig | None = None
    """A second attempt on another source when the first has no answer ``after`` its start."""
    fallback_lanes: list[str] = Field(default_factory=list)
    """Lanes tried in order when this lane's call fails, each with its own policy, all
    under the caller's one deadline."""
    sources: list[SourceConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _coherent(self) -> LaneConfig:
        if self.retries and not self.retry_on:
            raise ValueError("retries is set but retry_on is empty: nothing would be retried")
        if isinstance(self.retry_on, dict) and self.retry_on and not self.retries:
            raise ValueError(
                "retry_on gives retry counts but retries is 0: set retries, the bound on them all"
            )
        for code in self.retry_on:
            if isinstance(code, int) and code in REJECTION_STATUSES:
                raise FieldError(
                    ("retry_on",), f"{code} is a rejection; rejections are never retried"
                )
            if isinstance(code, int) and not 100 <= code <= 599:
                raise FieldError(("retry_on",), f"{code} is not an HTTP status")
        if self.kind == "embed" and (self.first_byte_timeout or self.idle_timeout):
            raise ValueError("first_byte_timeout and idle_timeout apply to chat lanes only")
        if self.kind == "chat" and self.dimensions is not None:
            raise ValueError("dimensions applies to embed lanes only")
        if self.deadline <= 0:
            raise ValueError("deadline must be positive")
        return self

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> LaneConfig:
        for name, kinds in _KIND_ONLY.items():
            if name in self.model_fields_set and self.kind not in kinds:
                raise ValueError(f"{name} applies to {' and '.join(kinds)} lanes only")
        streamed = self.first_byte_timeout or self.idle_timeout or self.continue_on_cut
        if self.kind == "ocr" and (streamed or self.dimensions is not None):
            raise ValueError("ocr lanes are not streamed and have no dimensions")
        return self

    @model_validator(mode="after")
    def _providers_serve_kind(self) -> LaneConfig:
        for source in self.sources:
            kinds = PROVIDER_KINDS[source.provider]
            if self.kind not in kinds:
                raise ValueError(
                    f"source {source.model}: {source.provider} sources serve "
                    f"{' and '.join(kinds)} lanes only"
                )
            if source.provider == "anthropic" and source.max_tokens is None:
                raise ValueError(
                    f"source {source.model}: max_tokens is required on anthropic sources "
                    "(Anthropic refuses calls without one; it applies when the caller gives none)"
                )
        return self

    @model_validator(mode="after")
    def _hedge_fits(self) -> LaneConfig:
        if self.hedge is not None:
            problem = self.hedge.problem(len(self.sources), self.per_attempt)
            if problem is not None:
                raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _chat_prices_have_output(self) -> LaneConfig:
        for source in self.sources:
            if self.kind == "chat" and source.price is not None and source.price.output is None:
                raise ValueError(f"source {source.model}: price.output is required on chat lanes")
        return self

    @property
    def per_attempt(self) -> float:
        """The per-attempt bound: ``attempt_timeout``, or the whole deadline."""
        return self.attempt_timeout if self.attempt_timeout is not None else self.deadline

    def source_names(self) -> list[str]:
        """Each source's name: its own, else ``provider:model`` (numbered if repeated)."""
        names: list[str] = []
        for index, source in enumerate(self.sources):
            name = source.name or f"{source.provider}:{source.model}"
            names.append(f"{name}#{index}" if name in names else name)
        return names


class BudgetConfig(Strict):
    """A key's spending caps in USD per UTC day, ISO week (Monday to Monday, UTC), UTC
    month, and in all (``total``, never reset); each optional."""

    daily: float | None = Field(default=None, gt=0)
    weekly: float | None = Field(default=None, gt=0)
    monthly: float | None = Field(default=None, gt=0)
    total: float | None = Field(default=None, gt=0)


class KeyConfig(Strict):
    """A caller's bearer key, the lanes it may use (``*`` for all), and its limits.

    ``rpm``, ``tpm`` and ``max_concurrency`` bound the key's calls across every
    replica; ``budget`` caps its USD spend. A budgeted key is refused calls on
    lanes that cannot be priced unless ``allow_unpriced`` says otherwise.
    """

    name: str
    key: SecretField | None = None
    sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        validation_alias=AliasChoices("sha256", "key_sha256"),
    )
    """The key's sha256 hex digest instead of the secret (``sha256:`` or ``key_sha256:``)."""
    lanes: list[str] = Field(default_factory=lambda: ["*"])
    rpm: int | None = Field(default=None, gt=0)
    tpm: int | None = Field(default=None, gt=0)
    max_concurrency: int | None = Field(default=None, gt=0)
    budget: BudgetConfig | None = None
    allow_unpriced: bool = False

    @property
    def limited(self) -> bool:
        """True when any limit or budget applies to this key."""
        budget = self.budget
        caps = () if budget is None else (budget.daily, budget.weekly, budget.monthly, budget.total)
        budgeted = any(cap is not None for cap in caps)
        return budgeted or any(v is not None for v in (self.rpm, self.tpm, self.max_concurrency))

    @model_validator(mode="after")
    def _one_form(self) -> KeyConfig:
        if (self.key is None) == (self.sha256 is None):
            raise ValueError("give exactly one of key or sha256")
        return self


class AdminKeyConfig(Strict):
    """A credential of the admin API (``/admin``): a name for the audit, and its secret."""

    name: str = Field(min_length=1)
    key: SecretField


def _ascending(thresholds: list[float]) -> list[float]:
    if thresholds != sorted(set(thresholds)):
        raise ValueError("list each threshold once, smallest first")
    return thresholds


class AlertsConfig(Strict):
    """Budget alerts: when a key's or a team's spend reaches each of ``thresholds`` (fractions
    of its budget) in a budget period, a log line, and a POST to ``webhook`` when set."""

    thresholds: Annotated[list[Annotated[float, Field(gt=0, le=1)]], AfterValidator(_ascending)] = (
        Field(default_factory=lambda: [0.5, 0.8, 1.0])
    )
    webhook: SecretField | None = None
    """An ``http(s)://`` URL (or an env reference to one: a chat webhook's URL is a secret)."""
    webhook_timeout: Duration = Field(default=5.0, gt=0, le=60)
    """How long one POST may take; a failed one is tried three times in all, then logged."""


class CorsConfig(Strict):
    """Web pages allowed to call the gateway: their origins (``https://app.example``)."""

    origins: list[Annotated[str, Field(pattern=r"^https?://[^/]+$")]] = Field(min_length=1)


class ServerConfig(Strict):
    """``laneway serve`` settings."""

    host: str = "127.0.0.1"
    port: int = Field(default=4000, ge=0, le=65535)
    max_request_bytes: Size = 32 * 1024 * 1024
    """Anthropic's own request limit: room for several base64 images in one vision request."""
    keys: list[KeyConfig] = Field(default_factory=list)
    admin_keys: list[AdminKeyConfig] = Field(default_factory=list)
    """The admin API's credentials; without any, ``/admin`` is off."""
    key_store: MaybeNetworkUrl | None = Field(default=None, min_length=1)
    """Where stored keys live: a SQLite path (relative to the config's folder) or a
    ``postgresql://`` URL shared by replicas. Unset with ``admin_keys`` given:
    ``laneway-keys.sqlite3`` beside the config. Unset without them: no stored keys."""
    key_store_poll: Duration = Field(default=0.5, ge=0.05, le=1.5)
    """How often each replica reads the store's version: a change reaches it this late."""
    drain_timeout: Duration = 10.0
    deadline_margin: Duration = 0.05
    header_timeout: Duration = Field(default=10.0, gt=0)
    """A connection's request head must be complete this long after it opened (or went idle)."""
    body_timeout: Duration = Field(default=60.0, gt=0)
    """A request's whole body must have arrived this long after its head."""
    keepalive_timeout: Duration = Field(default=5.0, gt=0)
    """An idle keep-alive connection is closed after this long without a new request."""
    max_header_bytes: Size = Field(default=64 * 1024, ge=1024)
    max_headers: int = Field(default=100, ge=8)
    max_connections: int | None = Field(default=None, ge=1)
    """Open client connections (all workers together); unset: half the file-descriptor limit,
    at most 4096."""
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    """Budget alerts of keys and teams (``thresholds``, ``webhook``)."""
    cors: CorsConfig | None = None
    """Without it, a request carrying an ``Origin`` header (a web page's) is refused."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names a keyless gateway answers besides IP literals, ``localhost`` and ``host``."""
    ready: Literal["all", "any"] = "all"
    """``/readyz`` answers 200 when every lane is ready (``all``) or at least one (``any``)."""
    metrics: bool = True
    """Count every call for ``/metrics`` and the status page; ``false`` turns both off, and
    what counting costs a call with them (applied at a restart, not a reload)."""
    worker_snapshot_interval: Duration = Field(default=1.0, ge=0.1, le=2.5)
    """Under ``--workers N``, how often each worker shares its metrics and status history: a
    scrape sees the other workers' calls this late at most. At least 0.1 s (each snapshot
    collects every figure); at most 2.5 s, half the age after which a snapshot's gauges no
    longer count (``metrics.share.GAUGE_MAX_AGE``)."""


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
            for i, other in enumerate(lane.fallback_lanes):
                where = ("lanes", name, "fallback_lanes", i)
                if other not in self.lanes:
                    known = did_you_mean(other, self.lanes)
                    raise FieldError(where, f"names unknown lane {other!r}{known}")
                if self.lanes[other].kind != lane.kind:
                    raise FieldError(
                        where, f"{other} is a {self.lanes[other].kind} lane, not {lane.kind}"
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
                pending.extend(reversed(self.lanes[name].fallback_lanes))
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
