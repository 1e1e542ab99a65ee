"""A lane in ``laneway.yaml``: its deadline, retries, backoff, timeouts, caches, hedge and
fallbacks, over its sources; a kind's fields are refused on a lane of another kind."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    Field,
    model_validator,
)

from laneway.config.describe import FieldError
from laneway.config.fields import (
    Duration,
    RetryCount,
    RetryLabel,
    Size,
    Strict,
    retry_labels,
)
from laneway.config.hedging import HedgeConfig
from laneway.config.sources import BreakerConfig, SourceConfig
from laneway.core.failures import REJECTION_STATUSES


class BackoffConfig(Strict):
    """The sleep between retries (see ``laneway.policy.backoff``)."""

    kind: Literal["constant", "exponential"] = "constant"
    base: Duration = 1.0
    cap: Duration = 8.0
    jitter: Literal["none", "full", "equal"] = "none"


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
        list[RetryLabel] | dict[RetryLabel, RetryCount], BeforeValidator(retry_labels)
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
