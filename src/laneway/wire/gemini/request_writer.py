"""An OpenAI chat request written as a Gemini ``GenerateContentRequest`` (and embeddings' body).

System and developer messages, wherever they stand, join
``systemInstruction`` in order. Assistant tool calls become ``functionCall``
parts (with the thought signature Gemini gave them, kept in the call's
``extra_content.google.thought_signature`` as Google's own OpenAI surface
does), and tool results ``functionResponse`` parts named after the call they
answer. Images are inline data only (Gemini fetches no https URLs).
``response_format`` becomes ``responseMimeType`` and ``responseSchema``;
``reasoning_effort`` a ``thinkingConfig`` budget with thought summaries.
``user`` is an end-user tag with no Gemini field and no effect on the answer;
it is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from laneway.core.errors import Inexpressible, RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.types import ChatRequest, EmbedInput, EmbedRequest
from laneway.wire.gemini.schema import gemini_schema
from laneway.wire.openai.parts import (
    TRANSLATED,
    FunctionTool,
    Image,
    Part,
    Text,
    ToolChoice,
    add_turn,
    content_parts,
    json_ask,
    namespaced,
    reasoning_budget,
    refuse_unhandled,
    text_only,
    tool_calls_of,
    tool_result_id,
    tools_and_choice,
)

WIRE = "gemini"
_GENERATION = {
    "temperature": "temperature",
    "top_p": "topP",
    "max_tokens": "maxOutputTokens",
    "max_completion_tokens": "maxOutputTokens",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "n": "candidateCount",
}
_HANDLED = TRANSLATED | set(_GENERATION)
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY", "named": "ANY"}


def generate_body(request: ChatRequest) -> dict[str, Any]:
    """The ``generateContent`` body, or ``Inexpressible``/``RequestInvalid``."""
    params = request.params
    refuse_unhandled(params, _HANDLED, WIRE)
    system, contents = gemini_contents(request.messages)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    config = _generation(params)
    if config:
        body["generationConfig"] = config
    _tools(params, body)
    own = namespaced(params, WIRE)
    extra_config = own.get("generationConfig")
    body.update({k: v for k, v in own.items() if k != "generationConfig"})
    if isinstance(extra_config, dict):
        body["generationConfig"] = {**body.get("generationConfig", {}), **extra_config}
    return body


def _generation(params: Mapping[str, Any]) -> dict[str, Any]:
    config = {_GENERATION[k]: v for k, v in params.items() if k in _GENERATION and v is not None}
    stop = params.get("stop")
    if stop is not None:
        config["stopSequences"] = [stop] if isinstance(stop, str) else stop
    ask = json_ask(params.get("response_format"))
    if ask is not None:
        config["responseMimeType"] = "application/json"
        if ask.schema is not None:
            config["responseSchema"] = gemini_schema(ask.schema, "response_format")
    budget = reasoning_budget(params.get("reasoning_effort"))
    if budget is not None:
        thinking: dict[str, Any] = {"thinkingBudget": budget}
        if budget:
            thinking["includeThoughts"] = True
        config["thinkingConfig"] = thinking
    return config


def _tools(params: Mapping[str, Any], body: dict[str, Any]) -> None:
    tools, choice = tools_and_choice(params)
    if not tools:
        return
    declarations = [_declaration(tool, index) for index, tool in enumerate(tools)]
    body["tools"] = [{"functionDeclarations": declarations}]
    if choice is not None:
        body["toolConfig"] = {"functionCallingConfig": _calling(choice)}


def _declaration(tool: FunctionTool, index: int) -> dict[str, Any]:
    if not (tool.name[0].isalpha() or tool.name[0] == "_"):
        raise Inexpressible(
            f"tools[{index}].function.name", "Gemini names start with a letter or _"
        )
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    if tool.parameters.get("properties"):
        out["parameters"] = gemini_schema(tool.parameters, f"tools[{index}].function.parameters")
    return out


def _calling(choice: ToolChoice) -> dict[str, Any]:
    config: dict[str, Any] = {"mode": _MODES[choice.mode]}
    if choice.name is not None:
        config["allowedFunctionNames"] = [choice.name]
    return config


def gemini_contents(
    messages: Sequence[ChatMessage],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``systemInstruction`` parts and the ``contents`` (same-role neighbours merged)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if role in ("system", "developer"):
            text = text_only(content_parts(message.get("content"), where), where)
            if text:
                system.append({"text": text})
            continue
        parts = _parts(role, message, where, names)
        add_turn(contents, "model" if role == "assistant" else "user", "parts", parts)
    return system, contents


def _parts(
    role: str, message: ChatMessage, where: str, names: dict[str, str]
) -> list[dict[str, Any]]:
    if role == "user":
        return [_part(part, where) for part in content_parts(message.get("content"), where)]
    if role == "assistant":
        parts = [_part(part, where) for part in content_parts(message.get("content"), where)]
        for call in tool_calls_of(message, where):
            names[call.id] = call.name
            native: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments}}
            signature = ((call.extra.get("extra_content") or {}).get("google") or {}).get(
                "thought_signature"
            )
            if isinstance(signature, str):
                native["thoughtSignature"] = signature
            parts.append(native)
        return parts
    if role == "tool":
        call_id = tool_result_id(message, where)
        if call_id not in names:
            raise RequestInvalid(f"{where}.tool_call_id", "answers no earlier tool call")
        text = text_only(content_parts(message.get("content"), where), where)
        return [{"functionResponse": {"name": names[call_id], "response": _response(text)}}]
    if role == "function":
        raise Inexpressible(f"{where}.role", "the deprecated function role has no equivalent")
    raise RequestInvalid(f"{where}.role", f"role {role!r} is not a chat role")


def _response(text: str) -> dict[str, Any]:
    """A tool result as the object Gemini wants: the JSON object it is, else ``{result}``."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"result": text}
    return value if isinstance(value, dict) else {"result": value}


def _part(part: Part, where: str) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    return _image(part, where)


def _image(image: Image, where: str) -> dict[str, Any]:
    if image.url is not None:
        raise Inexpressible(f"{where}.content", "Gemini takes inline (data: URL) images only")
    return {"inlineData": {"mimeType": image.mime, "data": image.data}}


def embed_contents_body(request: EmbedRequest, model: str) -> bytes:
    """``batchEmbedContents``' body; ``outputDimensionality`` when the lane pins a length."""
    for key in request.params:
        if key != "user":
            raise RequestInvalid(key, "has no equivalent in Gemini's batchEmbedContents")
    pinned = {} if request.dimensions is None else {"outputDimensionality": request.dimensions}
    items = [
        {"model": f"models/{model}", "content": {"parts": [{"text": text}]}, **pinned}
        for text in text_inputs(request.inputs, "Gemini's batchEmbedContents")
    ]
    return orjson.dumps({"requests": items})


def text_inputs(inputs: Sequence[EmbedInput], api: str) -> list[str]:
    """Embeddings inputs for a wire format that takes text only: token arrays are refused.

    A token array is the tokens of one model's tokenizer; another model would
    embed different text, so it is never decoded or passed on as numbers.
    """
    for index, item in enumerate(inputs):
        if not isinstance(item, str):
            message = f"is a token array; {api} takes text only: send the text"
            raise RequestInvalid(f"input[{index}]", message)
    return [item for item in inputs if isinstance(item, str)]
