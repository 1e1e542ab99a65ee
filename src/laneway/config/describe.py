"""Config errors as ``file:line: field: plain message (did you mean X?)``, each said once.

pydantic's errors are turned into that form here: the line is found in the
YAML node tree, an unknown key gets the nearest known one (or the laneway
name of a LiteLLM key), pydantic's wording is put plainly, and an error of a
deployment's field is said at the deployment, not again at each lane naming it.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from pydantic import BaseModel, Discriminator, Tag

Loc = tuple[str | int, ...]
LANE_KIND = "lane_kind"
"""The error type of a lane whose ``kind`` is none of ``LANE_KINDS`` (``config.lanes``)."""
LANE_KINDS = ("chat", "embed", "ocr")

LITELLM_NAMES = {
    "api_base": "base_url",
    "num_retries": "retries",
    "timeout": "attempt_timeout",
    "stream_timeout": "first_byte_timeout",
    "model_list": "deployments",
    "litellm_params": "deployments.<name>",
    "fallbacks": "fallback_lanes",
}
"""LiteLLM's names for laneway keys, suggested where they are written in ``laneway.yaml``."""

_PATTERNS = {
    "base_url": "must be an http:// or https:// URL",
    "url": "must be a redis://, rediss:// or unix:// URL",
    "api_version": "must be v1 or a date such as 2024-10-21 (optionally with -preview)",
    "sha256": "must be 64 lowercase hex digits (the key's SHA-256)",
    "origins": "must be an origin, http(s)://host[:port] without a path",
}
_PLAIN = {
    "missing": "required, and not given",
    "dict_type": "must be a mapping (key: value)",
    "model_type": "must be a mapping (key: value)",
    "model_attributes_type": "must be a mapping (key: value)",
    "list_type": "must be a list",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
}
_REWORDED = (
    ("Input should be", "must be"),
    ("String should", "must"),
    ("List should", "must"),
    ("Dictionary should", "must"),
    ("Value should", "must"),
    (" after validation", ""),
)


class FieldError(ValueError):
    """A validator's error about the field at ``loc`` (from the file's top), not its own."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(f"{dotted(loc)}: {message}")
        self.loc = loc
        self.message = message


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the choice nearest ``word``, or nothing."""
    if word in LITELLM_NAMES:
        return f" (did you mean {LITELLM_NAMES[word]}? {word} is LiteLLM's name)"
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return f" (did you mean {near[0]}?)" if near else ""


def describe(
    errors: Iterable[Mapping[str, Any]], root: type[BaseModel], node: yaml.Node | None, data: Any
) -> list[tuple[int | None, str]]:
    """Each error once, as ``(line, "field: message")``; ``data`` is the file as parsed."""
    out: list[tuple[int | None, str]] = []
    for err in errors:
        loc, message = _located(err, root)
        if not isinstance((err.get("ctx") or {}).get("error"), FieldError):
            loc = _at_deployment(loc, data)
        entry = (line_of(node, loc), f"{dotted(loc) or '(top level)'}: {message}")
        if entry not in out:
            out.append(entry)
    return out


def _located(err: Mapping[str, Any], root: type[BaseModel]) -> tuple[Loc, str]:
    loc, _ = _walk(root, tuple(err["loc"]))
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        return (*loc, *cause.loc), cause.message
    if err["type"] == LANE_KIND and isinstance(err.get("input"), dict) and "kind" in err["input"]:
        kind = err["input"]["kind"]
        near = did_you_mean(str(kind), LANE_KINDS)
        return (*loc, "kind"), f"{kind!r} is not a lane kind: {', '.join(LANE_KINDS)}{near}"
    if err["type"] == "extra_forbidden":
        _, parent = _walk(root, tuple(err["loc"])[:-1])
        return loc, "unknown key" + did_you_mean(str(loc[-1]), _fields_of(parent))
    if err["type"] == "string_pattern_mismatch":
        name = next((str(p) for p in reversed(loc) if isinstance(p, str)), "")
        return loc, _PATTERNS.get(name, f"does not have the form {err['ctx']['pattern']}")
    if err["type"] in _PLAIN:
        return loc, _PLAIN[err["type"]]
    message = str(err["msg"]).removeprefix("Value error, ")
    for raw, plain in _REWORDED:
        message = message.replace(raw, plain)
    return loc, message


def _at_deployment(loc: Loc, data: Any) -> Loc:
    """A lane source's field that is its deployment's, located at the deployment."""
    if len(loc) < 4 or loc[0] != "lanes" or loc[2] != "sources" or not isinstance(loc[3], int):
        return loc
    try:
        source = data["lanes"][loc[1]]["sources"][loc[3]]
    except (KeyError, IndexError, TypeError):
        return loc
    if not isinstance(source, dict) or not isinstance(source.get("deployment"), str):
        return loc
    if loc[4:5] in (("deployment",), ("name",), ("priority",), ("weight",)):
        return loc
    return ("deployments", source["deployment"], *loc[4:])


def _walk(root: type[BaseModel], loc: Loc) -> tuple[Loc, Any]:
    """``loc`` without pydantic's union tags, and the annotation it reaches.

    A discriminated union's tag (a lane's kind) is told from a key by where it
    stands, so a lane named ``chat`` keeps its name; the tag picks the model
    whose keys are suggested.
    """
    kept: list[str | int] = []
    annotation: Any = root
    for part in loc:
        tagged = _tagged(annotation, part)
        if tagged is not None:
            annotation = tagged
            continue
        if _is_union_tag(part):
            continue
        kept.append(part)
        model = _model_in(annotation)
        if model is not None and isinstance(part, str) and part in model.model_fields:
            annotation = model.model_fields[part].annotation
        else:
            annotation = _item_of(annotation)
    return tuple(kept), annotation


def _tagged(annotation: Any, part: object) -> Any:
    """The option of a discriminated union ``annotation`` whose tag is ``part``, if any."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    union, *metadata = typing.get_args(annotation)
    if not any(isinstance(m, Discriminator) for m in metadata):
        return None
    for option in typing.get_args(union):
        tags = typing.get_args(option)[1:]
        if any(isinstance(t, Tag) and t.tag == part for t in tags):
            return option
    return None


def _fields_of(annotation: Any) -> list[str]:
    """The keys the model ``annotation`` names knows (none when it names no model)."""
    model = _model_in(annotation)
    return list(model.model_fields) if model is not None else []


def _unwrapped(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Annotated:
        return _unwrapped(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for arg in typing.get_args(annotation) for a in _unwrapped(arg)]
    return [annotation]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    for option in _unwrapped(annotation):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def _item_of(annotation: Any) -> Any:
    """The value type of a ``list`` or ``dict`` among ``annotation``'s options."""
    for option in _unwrapped(annotation):
        args = typing.get_args(option)
        if typing.get_origin(option) in (list, dict) and args:
            return args[-1]
    return None


def _is_union_tag(part: object) -> bool:
    return isinstance(part, str) and ("[" in part or part in ("int", "str", "float"))


def dotted(loc: Loc) -> str:
    """``lanes.a.sources[0].base_url``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def line_of(node: yaml.Node | None, loc: Loc) -> int | None:
    """The 1-based line where ``loc`` stands in the YAML, as near as it exists."""
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next((kv for kv in node.value if kv[0].value == part), None)
            if found is None:
                break
            line = found[0].start_mark.line + 1
            node = found[1]
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line
