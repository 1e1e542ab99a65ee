"""``/admin``: the admin API (``server.admin``), when the gateway has a key store and admin keys.

The API itself (routes, authentication, answers) is ``server.admin``; this
endpoint reads the request's body when it has one and hands the request over.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from laneway.server.asgi import Reply, Scope
from laneway.server.context import RequestContext
from laneway.server.parts import GatewayParts

if TYPE_CHECKING:
    from laneway.server.admin import AdminApi


class Admin:
    """An ``/admin`` request, answered by the admin API."""

    __slots__ = ("api", "parts")

    def __init__(self, parts: GatewayParts, api: AdminApi) -> None:
        self.parts = parts
        self.api = api

    async def answer(self, scope: Scope, ctx: RequestContext) -> Reply:
        """The admin API's reply to ``ctx``'s request, its body read when it has one."""
        from laneway.server.admin import AdminRequest

        method: str = scope["method"]
        body = await self.parts.json(ctx) if method in ("POST", "PATCH") else None
        client = scope.get("client") or ("-", 0)
        request = AdminRequest(method, ctx.path, ctx.query, ctx.headers, body, str(client[0]))
        return await self.api.answer(replace(request, request_id=ctx.request_id))
