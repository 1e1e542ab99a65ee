"""``GET /v1/models`` and ``GET /v1/models/{id}``: the lanes and aliases a key may use.

Each key's list is rendered once, when the key ring is built (``server.keys``).
"""

from __future__ import annotations

from laneway.core.errors import UnknownLane
from laneway.server.asgi import Reply
from laneway.server.context import RequestContext
from laneway.server.keys import model_body
from laneway.server.parts import NO_CALL, GatewayParts


class Models:
    """The model list, and one model by its id."""

    __slots__ = ("parts",)

    def __init__(self, parts: GatewayParts) -> None:
        self.parts = parts

    async def list(self, ctx: RequestContext) -> None:
        """``GET /v1/models``: the caller's lanes and aliases."""
        caller = self.parts.keys.caller(ctx.headers)
        await self.parts.send(ctx, Reply(200, caller.models_body, NO_CALL))

    async def one(self, ctx: RequestContext) -> None:
        """``GET /v1/models/{id}``: a lane or alias the caller may use, else 404 as for an
        unknown lane."""
        caller = self.parts.keys.caller(ctx.headers)
        name = ctx.path.partition("/models/")[2]
        alias_of = caller.aliases.get(name)
        if alias_of is None and not caller.may_use(name):
            raise UnknownLane(name, list(caller.lanes), caller.aliases)
        await self.parts.send(ctx, Reply(200, model_body(name, alias_of), NO_CALL))
