"""The Gemini native API for the sim: `/v1beta/models/{model}:{method}`.

Answers follow Google's proto3 JSON, which leaves out zero counts (an answer
without thinking has no `thoughtsTokenCount`). Streams (`:streamGenerateContent`,
always SSE here) send no `[DONE]`: the last chunk carries `finishReason` and the
final `usageMetadata`. Pushback is told the Google way, as a `RetryInfo` detail
in the error body rather than a `Retry-After` header.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from laneway.sim._answers import DEFAULT_DIMS, Reply, embedding_vector, json_reply
from laneway.sim._native import Call, sse
from laneway.sim._request import requested_dimensions, tokens_for_chars

if TYPE_CHECKING:
    from collections.abc import Iterator

    from laneway.sim._answers import Completion, Headers
    from laneway.sim._request import Request
    from laneway.sim._spec import Behaviour

_METHODS = {
    "generateContent": ("chat", False),
    "streamGenerateContent": ("chat", True),
    "batchEmbedContents": ("embed", False),
}
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def _text(content: object) -> str:
    """The text of a `Content` (`{"parts": [{"text": ...}]}`), tolerating anything else."""
    parts = content.get("parts") if isinstance(content, dict) else None
    texts = (part.get("text") for part in parts or [] if isinstance(part, dict))
    return "".join(text for text in texts if isinstance(text, str))


def _chat_request(model: str, body: Request) -> Request:
    messages: list[dict[str, str]] = []
    if "systemInstruction" in body:
        messages.append({"role": "system", "content": _text(body["systemInstruction"])})
    for content in body.get("contents") or []:
        role = (
            "assistant" if isinstance(content, dict) and content.get("role") == "model" else "user"
        )
        messages.append({"role": role, "content": _text(content)})
    return {"model": model, "messages": messages}


def _embed_request(model: str, body: Request) -> Request:
    items = [item for item in body.get("requests") or [] if isinstance(item, dict)]
    request: Request = {"model": model, "input": [_text(item.get("content")) for item in items]}
    if items and "outputDimensionality" in items[0]:
        request["dimensions"] = items[0]["outputDimensionality"]
    return request


def _usage(completion: Completion, final: bool) -> dict[str, int]:
    """Final counts, or the running prompt-only counts of an earlier stream chunk."""
    prompt = completion.prompt_tokens
    if not final:
        return {"promptTokenCount": prompt, "totalTokenCount": prompt}
    answer, thoughts = len(completion.pieces), len(completion.reasoning_pieces)
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": answer}
    usage.update(totalTokenCount=prompt + answer + thoughts, thoughtsTokenCount=thoughts)
    return {key: value for key, value in usage.items() if value}


def _response(completion: Completion, parts: list[dict[str, Any]], final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if final:
        candidate["finishReason"] = "STOP"
    payload: dict[str, Any] = {"candidates": [candidate]}
    if completion.with_usage:
        payload["usageMetadata"] = _usage(completion, final)
    payload["modelVersion"] = completion.model
    payload["responseId"] = completion.id
    return payload


class _GeminiWriter:
    """One chunk per delta; the finish becomes the final chunk with the final usage."""

    def __init__(self, completion: Completion) -> None:
        self._completion = completion

    def choice(self, choice: dict[str, Any]) -> Iterator[bytes]:
        delta = choice.get("delta") or {}
        if delta.get("reasoning_content"):
            yield self._chunk([{"text": delta["reasoning_content"], "thought": True}])
        if delta.get("content"):
            yield self._chunk([{"text": delta["content"]}])
        if choice.get("finish_reason"):
            yield self._chunk([{"text": ""}], final=True)

    def done(self) -> Iterator[bytes]:
        return iter(())

    def _chunk(self, parts: list[dict[str, Any]], final: bool = False) -> bytes:
        return sse(_response(self._completion, parts, final), end=b"\r\n\r\n")


class GeminiDialect:
    """Reads `generateContent`, `streamGenerateContent` and `batchEmbedContents`."""

    def understand(self, method: str, endpoint: str, body: Request | None) -> Call | Reply:
        """Route `models/{model}:{method}`; the model named in the path is the one answering."""
        model, _, name = endpoint.removeprefix("models/").partition(":")
        if method != "POST" or not endpoint.startswith("models/") or name not in _METHODS:
            return self.error(404, f"sim: no route for {method} /v1beta/{endpoint}", None, [])
        if body is None:
            return self.error(400, "sim: the request body is not a JSON object", None, [])
        kind, stream = _METHODS[name]
        request = _embed_request(model, body) if kind == "embed" else _chat_request(model, body)
        return Call(kind, request, stream)

    def chat(self, completion: Completion) -> Reply:
        """A `GenerateContentResponse`: thought part first when reasoning, then the text."""
        parts: list[dict[str, Any]] = []
        if completion.reasoning_pieces:
            parts.append({"text": "".join(completion.reasoning_pieces), "thought": True})
        parts.append({"text": "".join(completion.pieces)})
        return json_reply(_response(completion, parts, final=True))

    def writer(self, completion: Completion) -> _GeminiWriter:
        """SSE chunks, `\\r\\n`-framed as Google sends them."""
        return _GeminiWriter(completion)

    def embed(self, behaviour: Behaviour, request: Request) -> Reply:
        """`embeddings[].values` and `usageMetadata.promptTokenCount` (unless `nousage`)."""
        dims = behaviour.dims or requested_dimensions(request) or DEFAULT_DIMS
        texts: list[str] = request["input"]
        payload: dict[str, Any] = {
            "embeddings": [{"values": embedding_vector(text, dims)} for text in texts]
        }
        if not behaviour.nousage:
            tokens = tokens_for_chars(sum(len(text) for text in texts))
            details = [{"modality": "TEXT", "tokenCount": tokens}]
            payload["usageMetadata"] = {"promptTokenCount": tokens, "promptTokenDetails": details}
        return json_reply(payload)

    def error(self, status: int, message: str, code: str | None, headers: Headers) -> Reply:
        """`{"error": {code, message, status}}`; a numeric Retry-After becomes `RetryInfo`."""
        if code == "context_length_exceeded":
            message = f"{message}: the input token count exceeds the maximum number of tokens"
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
        kept: Headers = []
        for name, value in headers:
            if name == b"retry-after" and value.replace(b".", b"", 1).isdigit():
                error["details"] = [{"@type": _RETRY_INFO, "retryDelay": f"{value.decode()}s"}]
            else:
                kept.append((name, value))
        return json_reply({"error": error}, status, kept)


GEMINI = GeminiDialect()
