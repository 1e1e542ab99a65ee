"""``server:`` in ``laneway.yaml``: the listener, its limits and timeouts, the keys, their
budgets and alerts, the admin keys and the browsers allowed in."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    Field,
    model_validator,
)

from laneway.config.fields import (
    Duration,
    MaybeNetworkUrl,
    SecretField,
    Size,
    Strict,
)


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
