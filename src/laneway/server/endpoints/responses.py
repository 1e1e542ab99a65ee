"""``POST /v1/responses``: OpenAI's Responses API, its text and tools subset, on any chat lane.

Its dialect is imported on the first such call, not at start (time to ready).
"""

from __future__ import annotations

from laneway.server.context import RequestContext
from laneway.server.endpoints.conversation import Conversation


class Responses:
    """OpenAI's responses, streamed or not (``responses_api``)."""

    __slots__ = ("conversation",)

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    async def answer(self, ctx: RequestContext) -> None:
        """One chat call in the Responses API's wire format."""
        from laneway.server.responses_api import RESPONSES

        await self.conversation.converse(ctx, RESPONSES)
