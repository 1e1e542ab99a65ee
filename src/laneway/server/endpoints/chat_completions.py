"""``POST /v1/chat/completions``: OpenAI's Chat Completions API on any chat lane."""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.dialect import OPENAI_CHAT
from laneway.server.endpoints.conversation import Conversation


class ChatCompletions:
    """OpenAI's chat completions, streamed or not."""

    __slots__ = ("conversation",)

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    async def answer(self, ctx: RequestContext) -> None:
        """One chat call in OpenAI's wire format."""
        await self.conversation.converse(ctx, OPENAI_CHAT)
