"""What a wire format cannot carry, found by asking its adapter, not by a table.

Each probe is a small request using one feature; an adapter that answers it
with ``Inexpressible`` cannot carry that feature. ``laneway check`` compares
the sources of a lane this way, so its warning can never drift from what the
adapters do.
"""

from __future__ import annotations

from laneway.core.messages import ChatMessage, ContentPart
from laneway.core.types import ChatRequest
from laneway.providers.base import Provider

_HI: list[ChatMessage] = [{"role": "user", "content": "hi"}]
_TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
_MAP = {
    "type": "object",
    "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}},
}


def _user(part: ContentPart) -> list[ChatMessage]:
    return [{"role": "user", "content": [part]}]


PROBES: dict[str, ChatRequest] = {
    "n > 1": ChatRequest(_HI, {"n": 2}),
    "seed": ChatRequest(_HI, {"seed": 7}),
    "logprobs": ChatRequest(_HI, {"logprobs": True}),
    "logit_bias": ChatRequest(_HI, {"logit_bias": {"50256": -100}}),
    "frequency/presence penalties": ChatRequest(_HI, {"frequency_penalty": 0.5}),
    "temperature above 1": ChatRequest(_HI, {"temperature": 1.5}),
    "parallel_tool_calls: false": ChatRequest(_HI, {"tools": _TOOLS, "parallel_tool_calls": False}),
    "JSON answers together with tools": ChatRequest(
        _HI, {"tools": _TOOLS, "response_format": {"type": "json_object"}}
    ),
    "JSON schemas with maps": ChatRequest(
        _HI,
        {"response_format": {"type": "json_schema", "json_schema": {"name": "m", "schema": _MAP}}},
    ),
    "https image URLs": ChatRequest(
        _user({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}})
    ),
    "audio and file parts": ChatRequest(
        _user({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}})
    ),
}
"""One request per feature that some wire format cannot carry."""


def limits_of(provider: Provider) -> list[str]:
    """The features of ``PROBES`` that ``provider`` cannot carry."""
    return [
        name
        for name, request in PROBES.items()
        if provider.inexpressible(request, stream=False) is not None
    ]
