"""Azure OpenAI: the OpenAI wire format under deployment URLs, keyed by ``api-key``.

A source's ``base_url`` is the resource endpoint
(``https://NAME.openai.azure.com``) and its ``model`` the deployment name:
chat goes to ``/openai/deployments/{deployment}/chat/completions?api-version=V``
(embeddings alike). With ``api_version: v1`` it goes to Azure's v1 surface,
``/openai/v1/chat/completions``, where the deployment is named in the body.
Answers are OpenAI's. Azure's prompt filter refuses with a 400 whose ``code``
is ``content_filter`` and whose ``innererror`` says which category fired; it
is mapped to the rejection an OpenAI ``content_filter`` 400 gets (the same
kind and body shape, with Azure's filter results kept in ``innererror``).
Azure streams open with a choiceless chunk whose ``object`` is empty, holding
the prompt's filter results; it is forwarded as a ``chat.completion.chunk``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from urllib.parse import quote

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.types import ChatChunk
from laneway.providers.openai import OpenAIProvider

DEFAULT_API_VERSION = "2024-10-21"
"""The latest GA data-plane version when this adapter was written."""
CONTENT_FILTER = "content_filter"


class AzureOpenAIProvider(OpenAIProvider):
    """An Azure OpenAI deployment: OpenAI bodies, Azure URLs and key header."""

    def __init__(
        self, base_url: str, deployment: str, api_key: str | None, api_version: str | None = None
    ) -> None:
        super().__init__(base_url, deployment, None)
        root = base_url.rstrip("/")
        version = api_version or DEFAULT_API_VERSION
        if version == "v1":
            self._chat_url = f"{root}/openai/v1/chat/completions"
            self._embed_url = f"{root}/openai/v1/embeddings"
        else:
            where = f"{root}/openai/deployments/{quote(deployment, safe='')}"
            query = f"?api-version={quote(version, safe='')}"
            self._chat_url = f"{where}/chat/completions{query}"
            self._embed_url = f"{where}/embeddings{query}"
        if api_key:
            self._headers["api-key"] = api_key

    def relay_scan(self, wire: str) -> None:
        """None: Azure's events are parsed and written (its opening chunk lacks ``object``)."""
        return

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """OpenAI's chunk parsing; Azure's choiceless opening chunk gets its ``object``."""
        chunk = super().parse_event(data)
        if chunk is not None and chunk.raw is not None and not chunk.raw.get("object"):
            chunk.raw["object"] = "chat.completion.chunk"
        return chunk

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """The shared rules; a content-filter refusal reads as OpenAI's."""
        failure = super().failure(status, headers, body, wall_now)
        error = (failure.body or {}).get("error") or {}
        if error.get("code") != CONTENT_FILTER:
            return failure
        shaped = {
            "message": error.get("message") or "the prompt was refused by Azure's content filter",
            "type": "invalid_request_error",
            "param": error.get("param") or "prompt",
            "code": CONTENT_FILTER,
        }
        if "innererror" in error:
            shaped["innererror"] = error["innererror"]
        return dataclasses.replace(failure, kind=FailureKind.REJECTED, body={"error": shaped})
