"""A deterministic instance of a JSON schema: the sim's structured answers and tool arguments.

Reads JSON Schema as OpenAI and pydantic write it (`$ref`/`$defs`, `anyOf`,
`type` lists) and Gemini's upper-case `Schema` alike. Every property is
filled, so the instance validates against the schema it came from; an object
that names no properties at all gets `FREE_OBJECT`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_STRINGS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00",
    "email": "sim@example.com",
    "uri": "https://example.com/sim",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_MAX_DEPTH = 16
FREE_OBJECT = {"answer": "sim answer"}
"""The instance of an object schema that names no properties (`json_object` mode)."""


def sample_instance(schema: object, defs: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """A value `schema` accepts (None for what it cannot describe)."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return None
    defs = defs if defs is not None else (schema.get("$defs") or schema.get("definitions") or {})
    if "$ref" in schema:
        target = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1])
        return sample_instance(target, defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            kept = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return sample_instance((kept or options)[0], defs, depth + 1)
    return _typed(schema, _type(schema), defs, depth)


def _type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind.lower()
    return "object" if "properties" in schema else "string"


def _typed(schema: Mapping[str, Any], kind: str, defs: Mapping[str, Any], depth: int) -> Any:
    if kind == "object":
        if "properties" not in schema:
            return dict(FREE_OBJECT)
        properties = schema["properties"]
        return {k: sample_instance(v, defs, depth + 1) for k, v in properties.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems") or 1))
        return [sample_instance(schema.get("items"), defs, depth + 1) for _ in range(count)]
    if kind == "integer":
        return max(1, int(schema.get("minimum") or 1))
    if kind == "number":
        return max(1.5, float(schema.get("minimum") or 1.5))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    text = _STRINGS.get(str(schema.get("format")), "sim")
    return text.ljust(int(schema.get("minLength") or 0), "m")
