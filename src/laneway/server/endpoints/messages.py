"""``POST /v1/messages``: Anthropic's Messages API on any chat lane (``anthropic_messages``).

Its dialect is imported on the first such call, not at start (time to ready).
"""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.endpoints.conversation import Conversation


class Messages:
    """Anthropic's messages, streamed or not."""

    __slots__ = ("conversation",)

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    async def answer(self, ctx: RequestContext) -> None:
        """One chat call in Anthropic's wire format."""
        from laneway.server.anthropic_messages import ANTHROPIC_MESSAGES

        await self.conversation.converse(ctx, ANTHROPIC_MESSAGES)
