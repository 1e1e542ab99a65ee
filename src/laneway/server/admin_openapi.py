"""``GET /admin/openapi.json``: the admin API described as OpenAPI 3.1, request bodies
from the same models that check them (``server.admin_input``)."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel

from laneway.server.admin_input import KeyBody, RotateBody, TeamBody

_ERROR = {"description": "the error, its `param` naming the field"}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _op(summary: str, ok: str, body: type[BaseModel] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "security": [{"adminKey": []}],
        "responses": {ok: {"description": "done"}, "401": _ERROR, "422": _ERROR, "429": _ERROR},
    }
    if body is not None:
        op["requestBody"] = _body(body)
    return op


_ID = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
_NAME = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
_SPEND = [
    {"name": "by", "in": "query", "schema": {"enum": ["key", "team", "lane"]}},
    {"name": "since", "in": "query", "schema": {"type": "string"}},
]

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "laneway admin API", "version": "1"},
    "components": {"securitySchemes": {"adminKey": {"type": "http", "scheme": "bearer"}}},
    "paths": {
        "/admin/keys": {
            "post": _op("Create a key; `key` in the answer is its secret, once", "201", KeyBody),
            "get": _op("List keys (no secrets), with spend so far and when last used", "200"),
        },
        "/admin/keys/{id}": {
            "parameters": _ID,
            "get": _op("One key", "200"),
            "patch": _op("Change a key's limits, lanes, team, expiry, block", "200", KeyBody),
            "delete": _op("Revoke a key: its secrets stop working", "200"),
        },
        "/admin/keys/{id}/rotate": {
            "parameters": _ID,
            "post": _op("A new secret; the old one works for `grace`", "200", RotateBody),
        },
        "/admin/teams": {
            "post": _op("Create a team; its keys keep within its limits", "201", TeamBody),
            "get": _op("List teams", "200"),
        },
        "/admin/teams/{name}": {
            "parameters": _NAME,
            "get": _op("One team and its keys", "200"),
            "patch": _op("Change a team", "200", TeamBody),
            "delete": _op("Delete a team without keys", "200"),
        },
        "/admin/spend": {"get": {**_op("Recorded spend", "200"), "parameters": _SPEND}},
        "/admin/audit": {"get": _op("The latest admin actions, newest first", "200")},
    },
}
OPENAPI = orjson.dumps(SPEC)
