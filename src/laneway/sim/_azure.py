"""Azure OpenAI for the sim: deployment URLs, `api-version`, `api-key`, content filters.

`/openai/deployments/{deployment}/chat/completions?api-version=V` (and
`/embeddings`), or the v1 surface `/openai/v1/...`, with or without a
`/b/<spec>` prefix. Like Azure it answers 404 without a known `api-version`
and 401 without an `api-key` (or bearer token); the deployment answers as the
model. Answers carry Azure's `prompt_filter_results` and per-choice
`content_filter_results` (streams open with a choiceless chunk holding the
prompt's), and the `content_filter` fault is Azure's 400 with its
`innererror`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from laneway.sim._answers import Reply, json_reply

if TYPE_CHECKING:
    from collections.abc import Iterator

    from laneway.sim._faults import Refusal
    from laneway.sim._request import Request
    from laneway.sim._stream import Step

_DEPLOYMENT = re.compile(
    r"^(?:/b/([^/]+))?/openai/deployments/([^/]+)(/chat/completions|/embeddings)$"
)
_V1 = re.compile(r"^(?:/b/([^/]+))?/openai/v1(/chat/completions|/embeddings)$")
_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}(-preview)?$")
_SAFE = {"filtered": False, "severity": "safe"}
CATEGORIES = ("hate", "self_harm", "sexual", "violence")


@dataclass(frozen=True, slots=True)
class AzureRoute:
    """An Azure path understood: the spec, the deployment (None on v1), the OpenAI endpoint."""

    spec: str
    deployment: str | None
    endpoint: str


def azure_route(path: str) -> AzureRoute | None:
    """The route of an Azure path, or None for any other path."""
    match = _DEPLOYMENT.match(path)
    if match is not None:
        return AzureRoute(match.group(1) or "ok", match.group(2), match.group(3))
    match = _V1.match(path)
    if match is not None:
        return AzureRoute(match.group(1) or "ok", None, match.group(2))
    return None


def _error(http_status: int, code: str, message: str, **extra: Any) -> Reply:
    return json_reply({"error": {"code": code, "message": message, **extra}}, http_status)


def azure_gate(
    route: AzureRoute, query: dict[str, list[str]], headers: dict[bytes, bytes]
) -> Reply | None:
    """Azure's refusals before any model runs: a missing key, an unknown `api-version`."""
    if b"api-key" not in headers and not headers.get(b"authorization", b"").startswith(b"Bearer "):
        message = "Access denied due to invalid subscription key or wrong API endpoint."
        return _error(401, "401", message)
    version = (query.get("api-version") or [""])[0]
    if route.deployment is not None and not _VERSION.match(version):
        return _error(404, "404", "Resource not found")
    return None


def azure_request(route: AzureRoute, request: Request) -> Request:
    """The request as the deployment serves it: the deployment is the model."""
    return {**request, "model": route.deployment} if route.deployment else request


def content_filter_reply() -> Reply:
    """Azure's prompt-filter 400, with the category that fired in `innererror`."""
    results = {name: dict(_SAFE) for name in CATEGORIES}
    results["violence"] = {"filtered": True, "severity": "medium"}
    return _error(
        400,
        "content_filter",
        "The response was filtered due to the prompt triggering Azure OpenAI's content "
        "management policy.",
        param="prompt",
        type=None,
        status=400,
        innererror={"code": "ResponsibleAIPolicyViolation", "content_filter_result": results},
    )


def _filter_results() -> dict[str, Any]:
    return {name: dict(_SAFE) for name in CATEGORIES}


def dressed(reply: Reply) -> Reply:
    """A chat answer with Azure's filter results added (others unchanged)."""
    if reply.status != 200:
        return reply
    payload = orjson.loads(reply.body)
    if payload.get("object") != "chat.completion":
        return reply
    payload["prompt_filter_results"] = [
        {"prompt_index": 0, "content_filter_results": _filter_results()}
    ]
    for choice in payload["choices"]:
        choice["content_filter_results"] = _filter_results()
    return Reply(200, orjson.dumps(payload), reply.headers)


def prompt_filter_event() -> bytes:
    """The choiceless chunk an Azure stream opens with."""
    chunk = {
        "id": "",
        "object": "",
        "created": 0,
        "model": "",
        "choices": [],
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _filter_results()}],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def azure_answer(answer: Reply | Iterator[Step], refusal: Refusal | None) -> Reply | Iterator[Step]:
    """An OpenAI-route answer as Azure gives it: filter results, Azure's filter refusal."""
    if refusal is not None and refusal.code == "content_filter":
        return content_filter_reply()
    if isinstance(answer, Reply):
        return dressed(answer)
    return _opened(answer)


def _opened(steps: Iterator[Step]) -> Iterator[Step]:
    yield prompt_filter_event()
    yield from steps
