"""The Anthropic Messages API for the sim: `POST /v1/messages`.

Every field is checked as the real API checks it (`_anthropic_check`), then the
request is read into the OpenAI shape the planner answers: tools, `tool_choice`,
`disable_parallel_tool_use`, tool results, images, stop sequences, thinking.
Answers carry `thinking`, `text` and `tool_use` blocks. Streams are
`event:`/`data:` pairs: `message_start`, a `ping`, one content block per kind
(thinking, text, each tool call with `input_json_delta` fragments) with its
deltas, `message_delta` with the stop reason and cumulative usage, then
`message_stop` (which `nodone` holds back). Thinking tokens are counted in
`output_tokens`, as Anthropic counts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from laneway.sim._answers import Reply, json_reply
from laneway.sim._anthropic_check import problem
from laneway.sim._cache import Prefix
from laneway.sim._native import Call, sse
from laneway.sim._request import prompt_chars, tokens_for_chars

if TYPE_CHECKING:
    from collections.abc import Iterator

    from laneway.sim._answers import Completion, Headers
    from laneway.sim._request import Request
    from laneway.sim._spec import Behaviour

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
SIGNATURE = "c2ltLXNpZ25hdHVyZQ=="
"""The opaque signature every thinking block carries."""


def _message_id(completion: Completion) -> str:
    return completion.id.replace("chatcmpl-", "msg_")


def _tool_id(openai_id: str) -> str:
    return openai_id.replace("call_", "toolu_", 1)


def _stop_reason(completion: Completion) -> str:
    if completion.tool_calls:
        return "tool_use"
    return "stop_sequence" if completion.stopped else "end_turn"


def _usage(completion: Completion) -> dict[str, int]:
    output = completion.answer_tokens + len(completion.reasoning_pieces)
    read, written = completion.cached_tokens, completion.cache_write_tokens
    return {
        "input_tokens": completion.prompt_tokens - read - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "output_tokens": output,
    }


def _message(completion: Completion, content: list[dict[str, Any]], final: bool) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": _message_id(completion),
        "type": "message",
        "role": "assistant",
        "model": completion.model,
        "content": content,
        "stop_reason": _stop_reason(completion) if final else None,
        "stop_sequence": None,
    }
    if completion.with_usage:
        message["usage"] = (
            _usage(completion) if final else {**_usage(completion), "output_tokens": 1}
        )
    return message


class _AnthropicWriter:
    """Opens and closes content blocks as the delta kind changes, as the real stream does."""

    def __init__(self, completion: Completion) -> None:
        self._completion = completion
        self._block: str | None = None
        self._index = -1

    def choice(self, choice: dict[str, Any]) -> Iterator[bytes]:
        delta = choice.get("delta") or {}
        if "role" in delta:
            yield _event("message_start", message=_message(self._completion, [], final=False))
            yield _event("ping")
        if delta.get("reasoning_content"):
            yield from self._open("thinking")
            yield self._delta({"type": "thinking_delta", "thinking": delta["reasoning_content"]})
        if delta.get("content"):
            yield from self._open("text")
            yield self._delta({"type": "text_delta", "text": delta["content"]})
        for call in delta.get("tool_calls") or []:
            yield from self._tool_call(call)
        if choice.get("finish_reason"):
            yield from self._close()
            stop = {"stop_reason": _stop_reason(self._completion), "stop_sequence": None}
            finished: dict[str, Any] = {"delta": stop}
            if self._completion.with_usage:
                finished["usage"] = _usage(self._completion)
            yield _event("message_delta", **finished)

    def done(self) -> Iterator[bytes]:
        yield _event("message_stop")

    def _tool_call(self, call: dict[str, Any]) -> Iterator[bytes]:
        """A call's opening starts a `tool_use` block; its fragments are `input_json_delta`s."""
        if "id" in call:
            yield from self._close()
            self._block, self._index = "tool_use", self._index + 1
            block = {"type": "tool_use", "id": _tool_id(call["id"]), "input": {}}
            block["name"] = call["function"]["name"]
            yield _event("content_block_start", index=self._index, content_block=block)
        fragment = call["function"].get("arguments")
        if fragment:
            yield self._delta({"type": "input_json_delta", "partial_json": fragment})

    def _open(self, kind: str) -> Iterator[bytes]:
        if self._block == kind:
            return
        yield from self._close()
        self._block, self._index = kind, self._index + 1
        empty = {"thinking": "", "signature": ""} if kind == "thinking" else {"text": ""}
        yield _event(
            "content_block_start", index=self._index, content_block={"type": kind, **empty}
        )

    def _close(self) -> Iterator[bytes]:
        if self._block == "thinking":
            yield self._delta({"type": "signature_delta", "signature": SIGNATURE})
        if self._block is not None:
            yield _event("content_block_stop", index=self._index)
        self._block = None

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _event("content_block_delta", index=self._index, delta=delta)


def _event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def _text(content: object) -> str:
    """A message's text: a string, or the `text` of its content blocks."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    texts = (block.get("text") for block in blocks if isinstance(block, dict))
    return "".join(text for text in texts if isinstance(text, str))


def _turn(role: str, content: object) -> list[dict[str, Any]]:
    """One checked Messages turn as OpenAI messages: tool results first, then the turn."""
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    results = [
        {"role": "tool", "tool_call_id": b["tool_use_id"], "content": _text(b.get("content", ""))}
        for b in blocks
        if b["type"] == "tool_result"
    ]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "text":
            parts.append({"type": "text", "text": block["text"]})
        elif block["type"] in ("image", "document"):
            parts.append({"type": "image_url", "image_url": {"url": "sim"}})
    message: dict[str, Any] = {"role": role, "content": parts}
    calls = [
        {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": "{}"}}
        for b in blocks
        if b["type"] == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    return [*results, message] if parts or calls else results


def _marked_prefix(body: Request) -> Prefix | None:
    """The prompt up to its last `cache_control` block (tools, system, messages, in order)."""
    pieces: list[tuple[str, int]] = []
    marked = 0
    for tool in body.get("tools") or []:
        pieces.append((orjson.dumps(tool).decode(), 0))
        marked = len(pieces) if "cache_control" in tool else marked
    system = body.get("system")
    turns = [{"content": system}] if system is not None else []
    for message in [*turns, *body["messages"]]:
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            text = block.get("text")
            text = text if isinstance(text, str) else ""
            pieces.append((text or orjson.dumps(block).decode(), len(text)))
            marked = len(pieces) if "cache_control" in block else marked
    if not marked:
        return None
    kept = pieces[:marked]
    chars = sum(count for _, count in kept)
    return Prefix("\x1e".join(text for text, _ in kept), tokens_for_chars(chars), explicit=True)


def _tool_choice(choice: dict[str, Any]) -> object:
    kind = choice["type"]
    if kind == "tool":
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"auto": "auto", "any": "required", "none": "none"}[kind]


def _openai_request(body: Request) -> Request:
    """A checked Messages body as the OpenAI-shaped request the planner reads."""
    messages: list[dict[str, Any]] = []
    if "system" in body:
        messages.append({"role": "system", "content": _text(body["system"])})
    for message in body["messages"]:
        messages.extend(_turn(message["role"], message["content"]))
    request: Request = {"model": body["model"], "messages": messages}
    if body.get("stop_sequences"):
        request["stop"] = body["stop_sequences"]
    if body.get("tools"):
        request["tools"] = [
            {"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}}
            for t in body["tools"]
        ]
    choice = body.get("tool_choice")
    if choice is not None:
        request["tool_choice"] = _tool_choice(choice)
        if choice.get("disable_parallel_tool_use"):
            request["parallel_tool_calls"] = False
    if (body.get("thinking") or {}).get("type") == "enabled":
        request["reasoning_effort"] = "medium"
    return request


class AnthropicDialect:
    """Reads `/v1/messages`; every other path under it is a 404."""

    def understand(self, method: str, endpoint: str, body: Request | None) -> Call | Reply:
        """The chat call, with `system` read as a leading system message.

        `count_tokens` is answered at once: the prompt's tokens as the sim counts them.
        """
        if (method, endpoint) == ("POST", "/count_tokens") and body is not None:
            if not isinstance(body.get("messages"), list) or not body["messages"]:
                return self.error(400, "sim: messages: Field required", None, [])
            counted = tokens_for_chars(prompt_chars(_openai_request({"max_tokens": 1, **body})))
            return json_reply({"input_tokens": counted})
        if (method, endpoint) != ("POST", ""):
            return self.error(404, f"sim: no route for {method} /v1/messages{endpoint}", None, [])
        if body is None:
            return self.error(400, "sim: the request body is not a JSON object", None, [])
        refused = problem(body)
        if refused is not None:
            return self.error(400, refused, None, [])
        streamed = body.get("stream") is True
        prefix = _marked_prefix(body)
        return Call("chat", _openai_request(body), streamed, prefix, implicit_cache=False)

    def chat(self, completion: Completion) -> Reply:
        """A `message`: a thinking block first when reasoning, then text, then tool uses."""
        content: list[dict[str, Any]] = []
        if completion.reasoning_pieces:
            thinking = "".join(completion.reasoning_pieces)
            content.append({"type": "thinking", "thinking": thinking, "signature": SIGNATURE})
        if completion.pieces:
            content.append({"type": "text", "text": "".join(completion.pieces)})
        content.extend(
            {
                "type": "tool_use",
                "id": _tool_id(c.id),
                "name": c.name,
                "input": orjson.loads(c.arguments),
            }
            for c in completion.tool_calls
        )
        return json_reply(_message(completion, content, final=True))

    def writer(self, completion: Completion) -> _AnthropicWriter:
        """A stateful writer: block boundaries depend on the previous delta."""
        return _AnthropicWriter(completion)

    def embed(self, behaviour: Behaviour, request: Request) -> Reply:
        """Never called: `understand` routes no embeddings request."""
        return self.error(404, "sim: Anthropic has no embeddings API", None, [])

    def error(self, status: int, message: str, code: str | None, headers: Headers) -> Reply:
        """`{"type": "error", "error": {type, message}}`, the window error worded as Anthropic's."""
        if code == "context_length_exceeded":
            message = f"prompt is too long: {message}"
        kind = _ERROR_TYPES.get(status, "api_error")
        return json_reply(
            {"type": "error", "error": {"type": kind, "message": message}}, status, headers
        )


ANTHROPIC = AnthropicDialect()
