"""Chat messages as a typed structure, the one walk over their text, and token estimates.

A ``ChatRequest`` carries OpenAI-shaped messages. ``laneway.core.shapes``
checks a caller's input against these types (a ``RequestInvalid`` naming the
field otherwise), so later code may rely on them: a ``text`` is a string, a
content is ``None``, a string or a list of parts. They are ``TypedDict``s,
not classes, because the messages are forwarded upstream as they are (the
OpenAI adapter sends them untouched) and a conversion per request would cost
every call for nothing.

``message_texts`` is the one walk over the text a request carries; token
estimates (quota reservations, usage estimates) read it, so both count the
same characters. ``estimate_tokens`` is the one estimator: one token per
``CHARS_PER_TOKEN`` characters, rounded up.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NotRequired, Required, TypedDict


class ImageUrl(TypedDict, total=False):
    """An ``image_url`` part's image: an https URL or a base64 ``data:`` URL."""

    url: Required[str]
    detail: str


class ContentPart(TypedDict, total=False):
    """One part of a message's content, named by ``type``: the field of that name holds it.

    ``text``, ``refusal`` and ``image_url`` are what laneway reads; ``file``
    and ``input_audio`` pass through to OpenAI-shaped sources (others refuse
    them as inexpressible). ``cache_control`` is Anthropic's prompt-cache
    marker, passed through.
    """

    type: Required[str]
    text: str
    refusal: str
    image_url: ImageUrl | str
    file: dict[str, Any]
    input_audio: dict[str, Any]
    cache_control: Any


class FunctionCall(TypedDict):
    """The function an assistant called: its name and its arguments as a JSON string."""

    name: str
    arguments: NotRequired[str]


class MessageToolCall(TypedDict, total=False):
    """One tool call of an assistant message (``extra_content`` carries Gemini's signature)."""

    id: str
    type: str
    function: FunctionCall
    extra_content: dict[str, Any]


Content = str | list[ContentPart] | None
"""A message's content: nothing, a string, or a list of parts."""


class ChatMessage(TypedDict, total=False):
    """One chat message: its ``role`` and, as the role wants, content and tool fields.

    ``thinking_blocks`` are an earlier Anthropic answer's signed reasoning,
    sent back on an assistant turn.
    """

    role: Required[str]
    content: Content
    name: str
    tool_call_id: str
    tool_calls: list[MessageToolCall]
    thinking_blocks: list[dict[str, Any]]


CHARS_PER_TOKEN = 4
"""Characters per token in every local estimate: OpenAI's figure for English."""


def content_texts(content: Content) -> Iterator[str]:
    """The text of one message's content: the string, or each part's ``text``."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            text = part.get("text")
            if isinstance(text, str):
                yield text


def message_texts(messages: Iterable[ChatMessage]) -> list[str]:
    """The text of every message in order: string contents and ``text`` parts.

    Images, tool calls and tool schemas are not text here: an estimate
    counts what the messages say, not their structure. A list, not a
    generator: every chat call sizes its quota reservation with it, and a
    string content (the usual one) then costs no generator step.
    """
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.extend(content_texts(content))
    return texts


def estimate_tokens(*texts: str) -> int:
    """Tokens in ``texts`` together, roughly: their characters over four, rounded up."""
    return -(-sum(map(len, texts)) // CHARS_PER_TOKEN)
