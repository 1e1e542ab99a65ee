"""The schema of ``laneway.yaml``. Every field is read somewhere; none is inert."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from laneway.core.units import parse_duration, parse_size

Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
RetryClass = Literal["timeout", "connect", "empty", "cut"]
REJECTION_CODES = frozenset({400, 401, 403, 404, 422})

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


class Strict(BaseModel):
    """Base of every config model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class BackoffConfig(Strict):
    """The sleep between retries (see ``laneway.policy.backoff``)."""

    kind: Literal["constant", "exponential"] = "constant"
    base: Duration = 1.0
    cap: Duration = 8.0
    jitter: Literal["none", "full", "equal"] = "none"


class SourceConfig(Strict):
    """One upstream a lane can call."""

    provider: Literal["openai"] = "openai"
    base_url: str
    model: str
    name: str | None = None
    api_key: SecretField | None = None
    priority: int = 0
    accepts_prefill: bool = False
    context_window: int | None = Field(default=None, gt=0)


class LaneConfig(Strict):
    """A named route: its sources and its enforced call policy."""

    kind: Literal["chat", "embed"] = "chat"
    deadline: Duration = 60.0
    attempt_timeout: Duration | None = None
    retries: int = Field(default=0, ge=0, le=20)
    retry_on: list[int | RetryClass] = Field(default_factory=list)
    backoff: BackoffConfig = Field(default_factory=BackoffConfig)
    min_attempt: Duration = 0.25
    max_pushback_wait: Duration = 30.0
    max_pushbacks: int = Field(default=2, ge=0, le=20)
    client_deadline: Duration | None = None
    first_byte_timeout: Duration | None = None
    idle_timeout: Duration | None = None
    continue_on_cut: bool = False
    dimensions: int | None = Field(default=None, gt=0)
    sources: list[SourceConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _coherent(self) -> LaneConfig:
        if self.retries and not self.retry_on:
            raise ValueError("retries is set but retry_on is empty: nothing would be retried")
        for code in self.retry_on:
            if isinstance(code, int) and code in REJECTION_CODES:
                raise ValueError(f"retry_on: {code} is a rejection; rejections are never retried")
            if isinstance(code, int) and not 100 <= code <= 599:
                raise ValueError(f"retry_on: {code} is not an HTTP status")
        if self.kind == "embed" and (self.first_byte_timeout or self.idle_timeout):
            raise ValueError("first_byte_timeout and idle_timeout apply to chat lanes only")
        if self.kind == "chat" and self.dimensions is not None:
            raise ValueError("dimensions applies to embed lanes only")
        if self.deadline <= 0:
            raise ValueError("deadline must be positive")
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


class KeyConfig(Strict):
    """A caller's bearer key and the lanes it may use (``*`` for all)."""

    name: str
    key: SecretField | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    lanes: list[str] = Field(default_factory=lambda: ["*"])

    @model_validator(mode="after")
    def _one_form(self) -> KeyConfig:
        if (self.key is None) == (self.sha256 is None):
            raise ValueError("give exactly one of key or sha256")
        return self


class ServerConfig(Strict):
    """``laneway serve`` settings."""

    host: str = "127.0.0.1"
    port: int = Field(default=4000, ge=0, le=65535)
    max_request_bytes: Size = 4 * 1024 * 1024
    keys: list[KeyConfig] = Field(default_factory=list)
    drain_timeout: Duration = 10.0
    deadline_margin: Duration = 0.05


class LanewayConfig(Strict):
    """The whole file."""

    lanes: dict[str, LaneConfig] = Field(min_length=1)
    server: ServerConfig = Field(default_factory=ServerConfig)

    @model_validator(mode="after")
    def _keys_name_lanes(self) -> LanewayConfig:
        for key in self.server.keys:
            for lane in key.lanes:
                if lane != "*" and lane not in self.lanes:
                    raise ValueError(f"server.keys[{key.name}] names unknown lane {lane!r}")
        return self
