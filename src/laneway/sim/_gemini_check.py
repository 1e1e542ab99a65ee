"""Check a `generateContent` request field by field, as the Gemini API does.

Unknown fields anywhere (top level, parts, `generationConfig`, `Schema`)
are refused with Google's wording, as are roles other than `user`/`model`,
parts with no data, an `OBJECT` schema without properties, function names
Gemini does not accept, and function responses that do not answer the calls
of the turn before them.
"""

from __future__ import annotations

import re
from typing import Any

from laneway.sim._refused import Refused, first_problem

_TOP = frozenset(
    {
        "contents",
        "systemInstruction",
        "generationConfig",
        "tools",
        "toolConfig",
        "safetySettings",
        "cachedContent",
        "labels",
    }
)
_PART_DATA = frozenset(
    {"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode"}
)
_PART_META = frozenset({"thought", "thoughtSignature"})
_CONFIG = frozenset(
    {
        "stopSequences",
        "temperature",
        "topP",
        "topK",
        "candidateCount",
        "maxOutputTokens",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "thinkingConfig",
        "responseLogprobs",
        "logprobs",
        "responseModalities",
        "mediaResolution",
    }
)
_SCHEMA = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "propertyOrdering",
        "items",
        "anyOf",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "default",
        "example",
        "minProperties",
        "maxProperties",
    }
)
_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
_MIME = frozenset({"text/plain", "application/json", "text/x.enum"})
_MODES = frozenset({"AUTO", "ANY", "NONE", "VALIDATED"})
MAX_CANDIDATES = 8
"""The most `candidateCount` Gemini takes."""
_FUNCTION_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")


def problem(body: dict[str, Any]) -> str | None:
    """What the real API would refuse in `body`, or None."""
    return first_problem(_check, body)


def _unknown(name: str, where: str) -> Refused:
    return Refused(
        f"Invalid JSON payload received. Unknown name \"{name}\" at '{where}': Cannot find field."
    )


def _keys(value: object, allowed: frozenset[str], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Refused(f"Invalid value at '{where}': expected an object")
    for key in value:
        if key not in allowed:
            raise _unknown(key, where)
    return value


def _check(body: dict[str, Any]) -> None:
    _keys(body, _TOP, "")
    if "systemInstruction" in body:
        system = _keys(
            body["systemInstruction"], frozenset({"parts", "role"}), "system_instruction"
        )
        _parts(system.get("parts"), "system_instruction.parts")
    names = _tools(body.get("tools"))
    _tool_config(body.get("toolConfig"), names)
    _generation(body.get("generationConfig"))
    _contents(body.get("contents"))


def _parts(parts: object, where: str) -> list[dict[str, Any]]:
    if not isinstance(parts, list) or not parts:
        raise Refused(f"{where}: must not be empty")
    for index, part in enumerate(parts):
        at = f"{where}[{index}]"
        _keys(part, _PART_DATA | _PART_META, at)
        data = [key for key in part if key in _PART_DATA]
        if len(data) != 1:
            raise Refused(f"{at}: a part must hold exactly one kind of data")
        inline = part.get("inlineData")
        if inline is not None:
            _keys(inline, frozenset({"mimeType", "data"}), f"{at}.inline_data")
            if not inline.get("mimeType") or not inline.get("data"):
                raise Refused(f"{at}.inline_data: mimeType and data are required")
    return parts


def _contents(contents: object) -> None:
    if not isinstance(contents, list) or not contents:
        raise Refused("contents is not specified")
    calls: list[str] = []
    for index, content in enumerate(contents):
        where = f"contents[{index}]"
        _keys(content, frozenset({"role", "parts"}), where)
        role = content.get("role", "user")
        if role not in ("user", "model"):
            raise Refused(f"{where}.role: Please use a valid role: user, model.")
        parts = _parts(content.get("parts"), f"{where}.parts")
        answers = [p["functionResponse"].get("name") for p in parts if "functionResponse" in p]
        if answers and sorted(answers) != sorted(calls):
            raise Refused(
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        calls = [p["functionCall"].get("name") for p in parts if "functionCall" in p]


def _generation(config: object) -> None:
    if config is None:
        return
    config = _keys(config, _CONFIG, "generation_config")
    stops = config.get("stopSequences", [])
    if not isinstance(stops, list) or len(stops) > 5:
        raise Refused("generation_config.stop_sequences: at most 5 strings")
    count = config.get("candidateCount", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_CANDIDATES:
        raise Refused(f"generation_config.candidate_count: must be 1 to {MAX_CANDIDATES}")
    temperature = config.get("temperature", 1)
    if not isinstance(temperature, int | float) or not 0 <= temperature <= 2:
        raise Refused("generation_config.temperature: must be 0 to 2")
    mime = config.get("responseMimeType", "text/plain")
    if mime not in _MIME:
        raise Refused(f"generation_config.response_mime_type: {mime!r} is not supported")
    if "responseSchema" in config:
        if mime == "text/plain":
            raise Refused("responseSchema needs responseMimeType application/json or text/x.enum")
        schema(config["responseSchema"], "generation_config.response_schema")
    if "thinkingConfig" in config:
        allowed = frozenset({"thinkingBudget", "includeThoughts", "thinkingLevel"})
        _keys(config["thinkingConfig"], allowed, "generation_config.thinking_config")


def schema(node: object, where: str) -> None:
    """Check a `Schema` object as Gemini does: known fields, a known type, non-empty objects."""
    node = _keys(node, _SCHEMA, where)
    kind = str(node.get("type", "")).upper()
    if "type" in node and kind not in _TYPES:
        raise Refused(f"{where}.type: unknown type {node['type']!r}")
    if kind == "OBJECT" and not node.get("properties"):
        raise Refused(f"{where}.properties: should be non-empty for OBJECT type")
    for name, child in (node.get("properties") or {}).items():
        schema(child, f"{where}.properties[{name}]")
    if "items" in node:
        schema(node["items"], f"{where}.items")
    for index, option in enumerate(node.get("anyOf") or []):
        schema(option, f"{where}.any_of[{index}]")


def _tools(tools: object) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        raise Refused("tools: expected a list")
    names: set[str] = set()
    for index, tool in enumerate(tools):
        allowed = frozenset({"functionDeclarations", "googleSearch", "codeExecution", "urlContext"})
        tool = _keys(tool, allowed, f"tools[{index}]")
        for number, declaration in enumerate(tool.get("functionDeclarations") or []):
            where = f"tools[{index}].function_declarations[{number}]"
            allowed = frozenset({"name", "description", "parameters", "response", "behavior"})
            declaration = _keys(declaration, allowed, where)
            name = declaration.get("name")
            if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
                raise Refused(
                    f"{where}.name: Invalid function name. Must start with a letter or "
                    "an underscore and be at most 64 characters"
                )
            if "parameters" in declaration:
                schema(declaration["parameters"], f"{where}.parameters")
            names.add(name)
    return names


def _tool_config(config: object, names: set[str]) -> None:
    if config is None:
        return
    config = _keys(config, frozenset({"functionCallingConfig"}), "tool_config")
    calling = _keys(
        config.get("functionCallingConfig", {}),
        frozenset({"mode", "allowedFunctionNames"}),
        "tool_config.function_calling_config",
    )
    mode = calling.get("mode", "AUTO")
    if mode not in _MODES:
        raise Refused(f"tool_config.function_calling_config.mode: {mode!r} is not a mode")
    allowed = calling.get("allowedFunctionNames")
    if allowed is not None and (mode != "ANY" or not set(allowed) <= names):
        raise Refused("allowed_function_names: only with mode ANY, naming declared functions")
