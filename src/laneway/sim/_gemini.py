"""The Gemini native API for the sim: `/v1beta/models/{model}:{method}`.

Chat requests are checked field by field as Gemini checks them
(`_gemini_check`), then read into the OpenAI shape the planner answers:
function declarations and `toolConfig`, function calls and responses in the
history, inline images, `responseMimeType`/`responseSchema`, stop sequences,
thought summaries. Function calls come back as whole `functionCall` parts
(in one chunk when streamed, as Gemini sends them). Answers follow Google's
proto3 JSON, which leaves out zero counts (an answer without thinking has no
`thoughtsTokenCount`). Streams (`:streamGenerateContent`,
always SSE here) send no `[DONE]`: the last chunk carries `finishReason` and the
final `usageMetadata`. Pushback is told the Google way, as a `RetryInfo` detail
in the error body rather than a `Retry-After` header.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from laneway.sim._answers import DEFAULT_DIMS, Reply, embedding_vector, json_reply
from laneway.sim._gemini_check import problem
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


def _turn(content: dict[str, Any], calls: list[str]) -> list[dict[str, Any]]:
    """One checked `Content` as OpenAI messages; `calls` pairs responses with call ids."""
    parts: list[dict[str, Any]] = content["parts"]
    responses = [
        {"role": "tool", "tool_call_id": calls.pop(0) if calls else "?", "content": "{}"}
        for part in parts
        if "functionResponse" in part
    ]
    message_parts: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part.get("text"), str) and not part.get("thought"):
            message_parts.append({"type": "text", "text": part["text"]})
        elif "inlineData" in part or "fileData" in part:
            message_parts.append({"type": "image_url", "image_url": {"url": "sim"}})
    named = [part["functionCall"] for part in parts if "functionCall" in part]
    ids = [f"call_{len(calls) + index}" for index in range(len(named))]
    calls.extend(ids)
    role = "assistant" if content.get("role") == "model" else "user"
    message: dict[str, Any] = {"role": role, "content": message_parts}
    if named:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": c.get("name"), "arguments": "{}"}}
            for i, c in zip(ids, named, strict=True)
        ]
    return [*responses, message] if message_parts or named else responses


def _chat_request(model: str, body: Request) -> Request:
    """A checked `generateContent` body as the OpenAI-shaped request the planner reads."""
    messages: list[dict[str, Any]] = []
    if "systemInstruction" in body:
        messages.append({"role": "system", "content": _text(body["systemInstruction"])})
    calls: list[str] = []
    for content in body["contents"]:
        messages.extend(_turn(content, calls))
    request: Request = {"model": model, "messages": messages}
    config = body.get("generationConfig") or {}
    if config.get("candidateCount"):
        request["n"] = config["candidateCount"]
    if config.get("stopSequences"):
        request["stop"] = config["stopSequences"]
    if config.get("responseMimeType") == "application/json":
        schema = config.get("responseSchema")
        request["response_format"] = (
            {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
            if schema is not None
            else {"type": "json_object"}
        )
    if (config.get("thinkingConfig") or {}).get("includeThoughts"):
        request["reasoning_effort"] = "medium"
    _read_tools(body, request)
    return request


def _read_tools(body: Request, request: Request) -> None:
    declarations = [
        d for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []
    ]
    if not declarations:
        return
    request["tools"] = [
        {"type": "function", "function": {"name": d["name"], "parameters": d.get("parameters")}}
        for d in declarations
    ]
    calling = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    mode, allowed = calling.get("mode", "AUTO"), calling.get("allowedFunctionNames") or []
    if mode == "NONE":
        request["tool_choice"] = "none"
    elif mode == "ANY" and len(allowed) == 1:
        request["tool_choice"] = {"type": "function", "function": {"name": allowed[0]}}
    elif mode == "ANY":
        request["tool_choice"] = "required"


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
    answer = completion.answer_tokens * completion.choices
    thoughts = len(completion.reasoning_pieces) * completion.choices
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": answer}
    usage.update(totalTokenCount=prompt + answer + thoughts, thoughtsTokenCount=thoughts)
    usage["cachedContentTokenCount"] = completion.cached_tokens
    return {key: value for key, value in usage.items() if value}


def _response(completion: Completion, parts: list[dict[str, Any]], final: bool) -> dict[str, Any]:
    candidates: list[dict[str, Any]] = []
    for index in range(completion.choices):
        candidate = {"content": {"parts": parts, "role": "model"}, "index": index}
        if final:
            candidate["finishReason"] = "STOP"
        candidates.append(candidate)
    payload: dict[str, Any] = {"candidates": candidates}
    if completion.with_usage:
        payload["usageMetadata"] = _usage(completion, final)
    payload["modelVersion"] = completion.model
    payload["responseId"] = completion.id
    return payload


def _function_calls(completion: Completion) -> list[dict[str, Any]]:
    return [
        {"functionCall": {"name": c.name, "args": orjson.loads(c.arguments)}}
        for c in completion.tool_calls
    ]


class _GeminiWriter:
    """One chunk per delta; function calls whole in one chunk; the finish with the usage."""

    def __init__(self, completion: Completion) -> None:
        self._completion = completion

    def choice(self, choice: dict[str, Any]) -> Iterator[bytes]:
        delta = choice.get("delta") or {}
        if delta.get("reasoning_content"):
            yield self._chunk([{"text": delta["reasoning_content"], "thought": True}])
        if delta.get("content"):
            yield self._chunk([{"text": delta["content"]}])
        if choice.get("finish_reason"):
            if self._completion.tool_calls:
                yield self._chunk(_function_calls(self._completion))
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
        if kind == "embed":
            return Call(kind, _embed_request(model, body), stream)
        refused = problem(body)
        if refused is not None:
            return self.error(400, refused, None, [])
        return Call(kind, _chat_request(model, body), stream)

    def chat(self, completion: Completion) -> Reply:
        """A `GenerateContentResponse`: thought part first when reasoning, then the text."""
        parts: list[dict[str, Any]] = []
        if completion.reasoning_pieces:
            parts.append({"text": "".join(completion.reasoning_pieces), "thought": True})
        if completion.pieces or not completion.tool_calls:
            parts.append({"text": "".join(completion.pieces)})
        parts.extend(_function_calls(completion))
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
