"""A lane in ``laneway.yaml``: its deadline, retries, backoff, timeouts, caches, hedge and
fallbacks, over its sources.

``LaneConfig`` is a union by ``kind`` (chat when unset): ``LaneBase`` holds what
every lane has, and ``ChatLaneConfig``, ``EmbedLaneConfig`` and ``OcrLaneConfig``
each add only the fields their calls read, so code reading a kind's field narrows
to that kind first, and a field of another kind is refused naming the kinds it
applies to.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from laneway.config.describe import LANE_KIND, LANE_KINDS, FieldError
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


class LaneBase(Strict):
    """What every lane has: a named route's sources and its enforced call policy."""

    kind: Literal["chat", "embed", "ocr"]
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
    breaker: BreakerConfig = Field(default_factory=BreakerConfig)
    stall_after: Duration | None = None
    estimate_missing_usage: bool = False
    require_price: bool = False
    hedge: HedgeConfig | None = None
    """A second attempt on another source when the first has no answer ``after`` its start."""
    sources: list[SourceConfig] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _fields_fit_kind(cls, data: object) -> object:
        """A field of another kind named with the kinds it applies to, not as an unknown key:
        the writer most likely meant it and forgot (or mistyped) the lane's ``kind``."""
        if not isinstance(data, dict):
            return data
        for name in data:
            kinds = _KINDS_OF.get(name)
            if kinds is not None and name not in cls.model_fields:
                kind = cls.model_fields["kind"].default
                this = f"this lane is {kind}"
                if "kind" not in data:
                    this = f"this lane gives no kind, so it is {kind} (set kind: {kinds[0]})"
                raise FieldError(
                    (name,), f"{name} applies to {' and '.join(kinds)} lanes only; {this}"
                )
        return data

    @model_validator(mode="after")
    def _coherent(self) -> Self:
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
        if self.deadline <= 0:
            raise ValueError("deadline must be positive")
        return self

    @model_validator(mode="after")
    def _providers_serve_kind(self) -> Self:
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
    def _hedge_fits(self) -> Self:
        if self.hedge is not None:
            problem = self.hedge.problem(len(self.sources), self.per_attempt)
            if problem is not None:
                raise ValueError(problem)
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


class ChatLaneConfig(LaneBase):
    """A chat lane: streamed or not, with its stream timeouts, response cache and fallbacks."""

    kind: Literal["chat"] = "chat"
    first_byte_timeout: Duration | None = None
    idle_timeout: Duration | None = None
    continue_on_cut: bool | Literal["restart"] = False
    cache: Annotated[ChatCacheConfig | None, BeforeValidator(_no_cache)] = None
    fallback_lanes: list[str] = Field(default_factory=list)
    """Lanes tried in order when this lane's call fails, each with its own policy, all
    under the caller's one deadline."""

    @model_validator(mode="after")
    def _prices_have_output(self) -> Self:
        for source in self.sources:
            if source.price is not None and source.price.output is None:
                raise ValueError(f"source {source.model}: price.output is required on chat lanes")
        return self


class EmbedLaneConfig(LaneBase):
    """An embeddings lane: its vector length, batching, size bounds, vector cache, fallbacks."""

    kind: Literal["embed"] = "embed"
    dimensions: int | None = Field(default=None, gt=0)
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
    fallback_lanes: list[str] = Field(default_factory=list)
    """Lanes tried in order when this lane's call fails, each with its own policy, all
    under the caller's one deadline."""


class OcrLaneConfig(LaneBase):
    """An OCR lane: a document read by a vision model, never streamed, its answers cacheable."""

    kind: Literal["ocr"] = "ocr"
    prompt: str | None = Field(default=None, min_length=1)
    cache: Annotated[ChatCacheConfig | None, BeforeValidator(_no_cache)] = None


_KINDS = (ChatLaneConfig, EmbedLaneConfig, OcrLaneConfig)

_KINDS_OF: dict[str, tuple[str, ...]] = {
    name: tuple(
        other.model_fields["kind"].default for other in _KINDS if name in other.model_fields
    )
    for lane in _KINDS
    for name in lane.model_fields
    if name not in LaneBase.model_fields
}
"""Each field some kinds have and others not, with the kinds that have it."""


def _kind_of(lane: object) -> str | None:
    """The union's tag: a mapping's ``kind`` (``chat`` when it has none), a lane's own; anything
    else is read as a chat lane, whose model then says what is wrong with it."""
    if isinstance(lane, dict):
        kind = lane.get("kind", "chat")
        return kind if isinstance(kind, str) else None
    return lane.kind if isinstance(lane, LaneBase) else "chat"


LaneConfig = Annotated[
    Annotated[ChatLaneConfig, Tag("chat")]
    | Annotated[EmbedLaneConfig, Tag("embed")]
    | Annotated[OcrLaneConfig, Tag("ocr")],
    Discriminator(
        _kind_of,
        custom_error_type=LANE_KIND,
        custom_error_message=f"kind must be {', '.join(LANE_KINDS)}",
    ),
]
"""A lane of any kind, parsed to its kind's class (``chat`` when ``kind`` is left out)."""


def fallback_lanes_of(lane: LaneConfig) -> list[str]:
    """The lanes ``lane`` falls back to (an OCR lane has none)."""
    return [] if isinstance(lane, OcrLaneConfig) else lane.fallback_lanes


def first_byte_timeout_of(lane: LaneConfig) -> float | None:
    """A chat lane's ``first_byte_timeout`` (other kinds are not streamed: none)."""
    return lane.first_byte_timeout if isinstance(lane, ChatLaneConfig) else None
