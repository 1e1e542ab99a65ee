"""What one source answered, parsed: the typed values a wire format reads an answer into.

The engine speaks these (and ``laneway.core.types``), never a wire format's
dicts: a provider adapter reads an answer into a ``ChatResult`` or an
``EmbedResult`` (``laneway.wire``), and the engine adds the call's facts
(lane, attempts, cost) to make the reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from laneway.core.passthrough import AnswerBody
from laneway.core.types import Reasoning, Usage
from laneway.core.vectors import Vector


@dataclass(slots=True)
class ChatResult:
    """A parsed, complete chat answer (before the engine adds call facts)."""

    content: str
    usage: Usage
    model: str
    finish_reason: str | None = None
    reasoning_content: str | None = None
    reasoning: Reasoning = Reasoning.UNKNOWN
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI-shaped tool calls (``id``, ``type``, ``function: {name, arguments}``)."""
    raw: dict[str, Any] = field(default_factory=dict)
    body: AnswerBody | None = None
    """The answer as it came, when a caller of its wire format may be given it as is."""

    @property
    def has_tool_calls(self) -> bool:
        """Whether the answer calls tools."""
        return bool(self.tool_calls)

    @property
    def empty(self) -> bool:
        """An answer with neither content nor tool calls."""
        return not self.content and not self.has_tool_calls


@dataclass(slots=True)
class EmbedResult:
    """Parsed vectors, in input order: Python floats, or kept in the caller's encoding."""

    vectors: list[Vector]
    usage: Usage
    model: str
    body: AnswerBody | None = None
    """The answer as it came, when it holds exactly ``vectors``, in order, in their encoding."""
