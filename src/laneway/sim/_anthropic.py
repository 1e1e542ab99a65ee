"""The Anthropic Messages API for the sim: `POST /v1/messages`.

Like the real API it refuses a request without `max_tokens`. Streams are
`event:`/`data:` pairs: `message_start`, a `ping`, one content block per kind
(thinking, then text) with its deltas, `message_delta` with the stop reason and
cumulative usage, then `message_stop` (which `nodone` holds back). Thinking
tokens are counted in `output_tokens`, as Anthropic counts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from laneway.sim._answers import Reply, json_reply
from laneway.sim._native import Call, sse

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


def _usage(completion: Completion) -> dict[str, int]:
    output = len(completion.pieces) + len(completion.reasoning_pieces)
    return {
        "input_tokens": completion.prompt_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
    }


def _message(completion: Completion, content: list[dict[str, Any]], final: bool) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": _message_id(completion),
        "type": "message",
        "role": "assistant",
        "model": completion.model,
        "content": content,
        "stop_reason": "end_turn" if final else None,
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
        if choice.get("finish_reason"):
            yield from self._close()
            finished: dict[str, Any] = {"delta": {"stop_reason": "end_turn", "stop_sequence": None}}
            if self._completion.with_usage:
                finished["usage"] = _usage(self._completion)
            yield _event("message_delta", **finished)

    def done(self) -> Iterator[bytes]:
        yield _event("message_stop")

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


class AnthropicDialect:
    """Reads `/v1/messages`; every other path under it is a 404."""

    def understand(self, method: str, endpoint: str, body: Request | None) -> Call | Reply:
        """The chat call, with `system` read as a leading system message."""
        if (method, endpoint) != ("POST", ""):
            return self.error(404, f"sim: no route for {method} /v1/messages{endpoint}", None, [])
        if body is None:
            return self.error(400, "sim: the request body is not a JSON object", None, [])
        if not isinstance(body.get("max_tokens"), int):
            return self.error(400, "max_tokens: Field required", None, [])
        turns = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        messages = [{"role": m.get("role"), "content": _text(m.get("content"))} for m in turns]
        if "system" in body:
            messages.insert(0, {"role": "system", "content": _text(body["system"])})
        request = {"model": body.get("model"), "messages": messages}
        return Call("chat", request, stream=body.get("stream") is True)

    def chat(self, completion: Completion) -> Reply:
        """A `message`: a thinking block first when reasoning, then the text block."""
        content: list[dict[str, Any]] = []
        if completion.reasoning_pieces:
            thinking = "".join(completion.reasoning_pieces)
            content.append({"type": "thinking", "thinking": thinking, "signature": SIGNATURE})
        if completion.pieces:
            content.append({"type": "text", "text": "".join(completion.pieces)})
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
