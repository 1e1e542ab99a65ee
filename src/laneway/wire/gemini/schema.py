"""JSON Schema (as OpenAI and pydantic write it) to Gemini's ``Schema`` object.

Gemini's ``responseSchema`` and function ``parameters`` take an OpenAPI
subset and refuse unknown keywords, so a pydantic schema is rewritten:
``$ref``s are inlined from ``$defs``, ``type: [t, "null"]`` and ``anyOf`` with
``null`` become ``nullable``, ``const`` a one-value ``enum``, and the types
upper-case. Keywords that only annotate or loosen (``$schema``,
``additionalProperties: false``, ``examples``) are left out, as are bounds
Gemini has no name for (``exclusiveMinimum``): laneway's structured output
validates the answer against the original schema anyway. What has no
equivalent (recursive schemas, maps, non-string enums, ``not``) is
``Inexpressible``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laneway.core.errors import Inexpressible

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_KEPT = frozenset(
    {
        "title",
        "description",
        "nullable",
        "maxItems",
        "minItems",
        "required",
        "propertyOrdering",
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
_LEFT_OUT = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "strict",
    }
)
_FORMATS = frozenset({"enum", "date-time", "int32", "int64", "float", "double"})
_MAX_DEPTH = 32


def gemini_schema(schema: Mapping[str, Any], field: str) -> dict[str, Any]:
    """``schema`` as a Gemini ``Schema``; ``Inexpressible`` naming ``field`` when it cannot be."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _Converter(defs, field).convert(schema, frozenset(), 0)


class _Converter:
    def __init__(self, defs: Mapping[str, Any], field: str) -> None:
        self.defs = defs
        self.field = field

    def refuse(self, reason: str) -> Inexpressible:
        return Inexpressible(self.field, f"the JSON schema {reason}: Gemini has no equivalent")

    def convert(self, node: object, seen: frozenset[str], depth: int) -> dict[str, Any]:
        if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
            raise self.refuse("is not an object schema of bounded depth")
        if "$ref" in node:
            node, seen = self.resolved(node, seen)
        out: dict[str, Any] = {}
        for key, value in node.items():
            self.keyword(out, key, value, seen, depth)
        return out

    def resolved(
        self, node: Mapping[str, Any], seen: frozenset[str]
    ) -> tuple[dict[str, Any], frozenset[str]]:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        if name in seen:
            raise self.refuse(f"is recursive ({name})")
        target = self.defs.get(name)
        if not isinstance(target, Mapping):
            raise self.refuse(f"refers to {node['$ref']!r}, which it does not define")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **rest}, seen | {name}

    def keyword(
        self, out: dict[str, Any], key: str, value: Any, seen: frozenset[str], depth: int
    ) -> None:
        if key == "type":
            self.type(out, value)
        elif key == "properties":
            out["properties"] = {k: self.convert(v, seen, depth + 1) for k, v in value.items()}
        elif key == "items":
            out["items"] = self.convert(value, seen, depth + 1)
        elif key in ("anyOf", "oneOf"):
            self.alternatives(out, value, seen, depth)
        elif key == "allOf" and isinstance(value, list) and len(value) == 1:
            out.update(self.convert(value[0], seen, depth + 1))
        else:
            self.plain(out, key, value)

    def plain(self, out: dict[str, Any], key: str, value: Any) -> None:
        """A keyword without subschemas: kept, rewritten, left out, or refused."""
        if key in ("enum", "const"):
            values = value if key == "enum" else [value]
            if not all(isinstance(v, str) for v in values):
                raise self.refuse("has a non-string enum")
            out.update(enum=list(values), format="enum")
            out.setdefault("type", "STRING")
        elif key == "format":
            if value in _FORMATS:
                out["format"] = value
        elif key == "additionalProperties":
            if value not in (False, True, {}):
                raise self.refuse("has additionalProperties with a schema (a map)")
        elif key in _KEPT:
            out[key] = value
        elif key not in _LEFT_OUT:
            raise self.refuse(f"keyword {key!r}")

    def type(self, out: dict[str, Any], value: Any) -> None:
        names = value if isinstance(value, list) else [value]
        kinds = [n for n in names if n != "null"]
        if len(kinds) != 1 or kinds[0] not in _TYPES:
            raise self.refuse(f"type {value!r}")
        out["type"] = _TYPES[kinds[0]]
        if len(kinds) < len(names):
            out["nullable"] = True

    def alternatives(
        self, out: dict[str, Any], value: Any, seen: frozenset[str], depth: int
    ) -> None:
        if not isinstance(value, list) or not value:
            raise self.refuse("has an empty anyOf")
        kept = [v for v in value if not (isinstance(v, Mapping) and v.get("type") == "null")]
        if len(kept) < len(value):
            out["nullable"] = True
        converted = [self.convert(v, seen, depth + 1) for v in kept]
        if len(converted) == 1:
            out.update(converted[0])
        elif converted:
            out["anyOf"] = converted
