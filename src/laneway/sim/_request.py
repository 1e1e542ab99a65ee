"""Read the few request fields the sim cares about, tolerating anything malformed.

The sim is not a validator: a missing or oddly typed field falls back to a default
so that fault behaviour, not request checking, decides the answer.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MODEL = "sim-model"
"""Model name used when neither the spec nor the request names one."""

Request = dict[str, Any]


def requested_model(request: Request) -> str:
    """Return the request's `model`, or the default when it is absent or not text."""
    model = request.get("model")
    return model if isinstance(model, str) else DEFAULT_MODEL


def wants_stream(request: Request) -> bool:
    """Whether the client asked for server-sent events."""
    return request.get("stream") is True


def wants_stream_usage(request: Request) -> bool:
    """Whether the client asked for a usage chunk at the end of a stream."""
    options = request.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _content_chars(content: object) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        texts = (part.get("text") for part in content if isinstance(part, dict))
        return sum(len(text) for text in texts if isinstance(text, str))
    return 0


def _messages(request: Request) -> list[dict[str, Any]]:
    messages = request.get("messages")
    if not isinstance(messages, list):
        return []
    return [message for message in messages if isinstance(message, dict)]


def prompt_chars(request: Request) -> int:
    """Total characters of message contents, text parts included."""
    return sum(_content_chars(message.get("content")) for message in _messages(request))


def last_role(request: Request) -> str | None:
    """Role of the final message, used to spot assistant prefill."""
    messages = _messages(request)
    role = messages[-1].get("role") if messages else None
    return role if isinstance(role, str) else None


def prefill_text(request: Request) -> str | None:
    """The text of a final assistant message (a prefill the answer continues), if any."""
    messages = _messages(request)
    if not messages or messages[-1].get("role") != "assistant":
        return None
    content = messages[-1].get("content")
    return content if isinstance(content, str) else None


def assistant_turns(request: Request) -> int:
    """How many earlier answers the conversation carries (re-asks add one each)."""
    return sum(1 for message in _messages(request) if message.get("role") == "assistant")


def _is_token_array(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(item, int) for item in items)


def embedding_inputs(request: Request) -> list[str]:
    """Return `input` as a list of texts; a token array counts as one text (its repr)."""
    inputs = request.get("input")
    if inputs is None:
        return []
    if not isinstance(inputs, list) or _is_token_array(inputs):
        inputs = [inputs]
    return [item if isinstance(item, str) else str(item) for item in inputs]


def requested_dimensions(request: Request) -> int | None:
    """The embedding `dimensions` field, when it is a usable positive integer."""
    dimensions = request.get("dimensions")
    if isinstance(dimensions, int) and not isinstance(dimensions, bool) and dimensions > 0:
        return dimensions
    return None


def tokens_for_chars(chars: int) -> int:
    """Estimate tokens the way the sim reports them: a token per four characters, plus one."""
    return chars // 4 + 1


def implicit_prefix(request: Request) -> tuple[str, int]:
    """The messages before the last, as cache-key text, and their prompt tokens."""
    earlier = _messages(request)[:-1]
    chars = sum(_content_chars(message.get("content")) for message in earlier)
    text = "\x1e".join(str(message.get("content")) for message in earlier)
    return text, tokens_for_chars(chars)
