"""``POST /v1/messages/count_tokens``: Anthropic's token count on any chat lane.

The count itself (forwarded to an Anthropic source, or laneway's estimate) is
``server.count_tokens``; its dialect is imported on the first such call.
"""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.parts import GatewayParts


class CountTokens:
    """Anthropic's ``count_tokens``, answered in Anthropic's error shapes."""

    __slots__ = ("parts",)

    def __init__(self, parts: GatewayParts) -> None:
        self.parts = parts

    async def answer(self, ctx: RequestContext) -> None:
        """The count of the body's input tokens on the lane its ``model`` names."""
        from laneway.server.anthropic_messages import ANTHROPIC_MESSAGES
        from laneway.server.count_tokens import count_tokens

        ctx.dialect = ANTHROPIC_MESSAGES
        parts = self.parts
        _, data, lane = await parts.request(ctx)
        await parts.send(ctx, await count_tokens(parts.engine, lane, data))
