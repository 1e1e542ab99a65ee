"""The gateway's endpoints, one module per API, and the route table that names them.

Each endpoint is a small object over the shared ``GatewayParts`` with an
async method per route, taking the request's context (``server.context``).
The table is built once per config; ``server.router`` looks a request up in it.
"""

from __future__ import annotations

from laneway.server.context import Handler
from laneway.server.dialect import OPENAI_CHAT, Dialect
from laneway.server.endpoints.conversation import ChatRoute, Conversation
from laneway.server.endpoints.count_tokens import CountTokens
from laneway.server.endpoints.embeddings import Embeddings
from laneway.server.endpoints.health import Health
from laneway.server.endpoints.metrics import Scrapes
from laneway.server.endpoints.models import Models
from laneway.server.endpoints.ocr import Ocr
from laneway.server.parts import GatewayParts

Routes = dict[str, tuple[str, Handler]]
"""Each path's method and endpoint."""


def _anthropic_messages() -> Dialect:
    from laneway.server.anthropic_messages import ANTHROPIC_MESSAGES

    return ANTHROPIC_MESSAGES


def _responses_api() -> Dialect:
    from laneway.server.responses_api import RESPONSES

    return RESPONSES


def route_table(parts: GatewayParts, health: Health, scrapes: Scrapes | None) -> Routes:
    """Every fixed path of the gateway (the API with and without ``/v1``), its method and
    endpoint; ``/metrics`` and the status page only with ``scrapes``."""
    conversation = Conversation(parts)
    api: Routes = {
        "/chat/completions": ("POST", ChatRoute(conversation, lambda: OPENAI_CHAT).answer),
        "/messages": ("POST", ChatRoute(conversation, _anthropic_messages).answer),
        "/messages/count_tokens": ("POST", CountTokens(parts).answer),
        "/responses": ("POST", ChatRoute(conversation, _responses_api).answer),
        "/embeddings": ("POST", Embeddings(parts).answer),
        "/ocr": ("POST", Ocr(parts).answer),
        "/models": ("GET", Models(parts).list),
    }
    routes: Routes = {
        **{f"/v1{path}": route for path, route in api.items()},
        **api,
        "/healthz": ("GET", health.healthz),
        "/readyz": ("GET", health.readyz),
    }
    if scrapes is not None:
        routes["/metrics"] = ("GET", scrapes.metrics_text)
        routes["/status"] = ("GET", scrapes.status_page)
        routes["/status.json"] = ("GET", scrapes.status_page)
    return routes
