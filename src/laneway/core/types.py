"""Requests, results and usage: the values that cross every layer.

Usage fields are ``int | None``: ``None`` means the upstream did not report the
figure for this call. A missing figure is never turned into 0.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from laneway.core.messages import ChatMessage
from laneway.core.passthrough import AnswerBody, CallerBody
from laneway.core.vectors import EncodedVector, VectorEncoding

EmbedInput = str | list[int]
"""One embeddings input: a text, or a text already tokenised (LangChain sends these)."""
UsageSource = Literal["provider", "estimated", "none"]
CacheStatus = Literal["hit", "miss", "bypass", "refresh"]
"""What the response cache did: answered (``hit``), missed and kept the answer (``miss``),
was not used (``bypass``: the lane declares no cache, a stream, ``Cache-Control: no-store``),
or was skipped for a fresh answer that replaced the entry (``refresh``: ``no-cache``)."""
CacheControl = Literal["no-cache", "no-store"]
"""A caller's say over the response cache, as the HTTP header writes it."""
"""``hit``: served from a cache; ``miss``: looked up, then called upstream; ``bypass``: no cache."""


class Reasoning(enum.Enum):
    """Whether a response carried reasoning; ``UNKNOWN`` unless the answer says."""

    UNKNOWN = "unknown"
    PRESENT = "present"
    ABSENT = "absent"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call; ``None`` where the upstream reported nothing.

    ``reasoning_tokens`` is part of completion tokens; ``cached_tokens``
    (prompt-cache reads) and ``cache_write_tokens`` (prompt-cache writes, which
    Anthropic bills above plain input) are parts of prompt tokens: attribution,
    not extra charges.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    source: UsageSource = "none"

    @property
    def known(self) -> bool:
        """True when the upstream (or an estimate) gave any figure."""
        return self.source != "none"


NO_USAGE = Usage()

HEDGE_WON = "hedge_won"
"""The outcome of a hedge that answered first: the call's answer came from it."""
HEDGE_LOST = "hedge_lost"
"""The outcome of a hedge cancelled because the first attempt answered first."""
CANCELLED = "cancelled"
"""The outcome of a first attempt cancelled because its hedge answered first."""
ANSWERED = frozenset({"ok", HEDGE_WON})
"""Outcomes of the attempt that gave the call its answer."""
UNJUDGED = frozenset({HEDGE_LOST, CANCELLED})
"""Outcomes of an attempt cut off by the race it lost: neither a failure nor a success."""
RACED = frozenset({HEDGE_WON, *UNJUDGED})
"""Outcomes only a hedge race gives its attempts (counted in ``laneway_hedges_total``)."""
NOT_FAILED = ANSWERED | UNJUDGED
"""Every outcome that is not a failure of the source."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt met: the source, the outcome label, and how long it took.

    ``outcome`` is ``ok`` or a ``retry_on`` label (``503``, ``timeout``,
    ``connect``, ``empty``, ``cut``...), a hedge race's ``hedge_won``,
    ``hedge_lost`` or ``cancelled``, or ``not_ready``: no request, one
    problem of a lane skipped for its fallback lanes. ``waited`` is the time from its end
    to the next attempt's start: the backoff or Retry-After before going back
    to the same source, or admission's wait (0 when no attempt followed).
    ``continuation`` marks an attempt that continued a stream cut on an
    earlier one. ``usage`` is the attempt's
    own usage, kept only where a call's usage spans several upstream answers
    (a continued stream), so each part can be priced at its source's rate.
    ``began`` is when the attempt started, in seconds from the call's start,
    set where attempts overlap (a hedge race), so a trace can draw them so;
    ``None``: the attempts ran one after another.
    """

    source: str
    outcome: str
    elapsed: float
    status: int | None = None
    pushback: bool = False
    waited: float = 0.0
    message: str = ""
    continuation: bool = False
    usage: Usage | None = None
    began: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Render for error bodies and headers (milliseconds, rounded)."""
        out: dict[str, Any] = {
            "source": self.source,
            "outcome": self.outcome,
            "elapsed_ms": round(self.elapsed * 1000, 1),
        }
        if self.status is not None:
            out["status"] = self.status
        if self.pushback:
            out["pushback"] = True
        if self.waited:
            out["waited_ms"] = round(self.waited * 1000, 1)
        if self.continuation:
            out["continuation"] = True
        if self.usage is not None:
            out["usage"] = {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "usage_source": self.usage.source,
            }
        return out


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A chat call: OpenAI-shaped messages plus pass-through parameters.

    ``headers`` are the caller's headers to forward upstream (``X-Request-Id``,
    ``OpenAI-Organization``...); each adapter sends those its wire format takes.
    They are not part of what is asked, so the response cache ignores them.
    ``caller_body`` is the gateway caller's body as it was sent, which a
    source of the same wire format may be sent with only its model changed
    (``laneway.core.passthrough``).
    """

    messages: list[ChatMessage]
    params: dict[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    caller_body: CallerBody | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class EmbedRequest:
    """An embeddings call over one or more inputs: texts, or token arrays (``EmbedInput``).

    ``headers`` are forwarded upstream, as for ``ChatRequest``. ``encoding``
    is for a relay: ``None`` (the library's) answers Python floats in
    ``EmbeddingResponse.vectors``; ``float`` or ``base64`` answers each vector
    in that OpenAI encoding in ``EmbeddingResponse.encoded``, as the upstream
    sent it where it could (``laneway.core.vectors``).
    """

    inputs: Sequence[EmbedInput]
    dimensions: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    encoding: VectorEncoding | None = None


@dataclass(slots=True)
class LLMResponse:
    """A completed chat call."""

    lane: str
    source: str
    model: str
    content: str
    usage: Usage
    attempts: tuple[Attempt, ...]
    elapsed: float
    finish_reason: str | None = None
    reasoning_content: str | None = None
    reasoning: Reasoning = Reasoning.UNKNOWN
    raw: dict[str, Any] = field(default_factory=dict)
    cache: CacheStatus = "bypass"
    cost: Decimal | None = None
    """What the call cost in USD (0 for a cache hit); ``None`` when unknown (``cost_unknown``)."""
    cost_unknown: str | None = None
    """Why ``cost`` is ``None``: ``unpriced model`` or ``usage unknown``."""
    answer_body: AnswerBody | None = field(default=None, compare=False, repr=False)
    """The source's answer as it came, which a gateway caller of its wire format gets as is."""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The answer's tool calls in OpenAI's shape (``id``, ``type``, ``function``)."""
        choices = self.raw.get("choices") or [{}]
        calls = (choices[0].get("message") or {}).get("tool_calls")
        return calls if isinstance(calls, list) else []


@dataclass(slots=True)
class EmbeddingResponse:
    """A completed embeddings call; ``vectors`` are in input order.

    When the request asked for an ``encoding``, ``vectors`` is empty and
    ``encoded`` holds them instead, in input order.
    """

    lane: str
    source: str
    model: str
    vectors: list[list[float]]
    usage: Usage
    attempts: tuple[Attempt, ...]
    elapsed: float
    cache: CacheStatus = "bypass"
    cost: Decimal | None = None
    """What the call cost in USD (0 for a cache hit); ``None`` when unknown (``cost_unknown``)."""
    cost_unknown: str | None = None
    """Why ``cost`` is ``None``: ``unpriced model`` or ``usage unknown``."""
    encoded: list[EncodedVector] = field(default_factory=list)
    answer_body: AnswerBody | None = field(default=None, compare=False, repr=False)
    """The one upstream answer that holds ``encoded`` as it came (a relay writes it as is)."""


@dataclass(slots=True)
class OCRResponse:
    """A completed OCR call: the text a vision model read from one image or page."""

    lane: str
    source: str
    model: str
    text: str
    usage: Usage
    attempts: tuple[Attempt, ...]
    elapsed: float
    cache: CacheStatus = "bypass"
    cost: Decimal | None = None
    """What the call cost in USD (0 for a cache hit); ``None`` when unknown (``cost_unknown``)."""
    cost_unknown: str | None = None
    """Why ``cost`` is ``None``: ``unpriced model`` or ``usage unknown``."""


@dataclass(frozen=True, slots=True)
class ChatChunk:
    """One parsed event of a chat stream, in the provider-neutral form.

    ``raw`` is the upstream event as OpenAI's chunk shape, so the gateway can
    forward it without re-encoding its meaning. ``tool_call_delta`` says the
    event carries part of a tool call (its id and name, or argument text),
    read by the wire format that parsed it, so the engine need not look into
    ``raw``.
    """

    content: str = ""
    reasoning_content: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    raw: dict[str, Any] | None = None
    tool_call_delta: bool = False
