"""Per-source quotas (``rpm``, ``tpm``) and the size of a reservation.

An attempt reserves one request and an estimate of its tokens before it is
sent, and settles with the real usage after: reservation and settlement net
to the real usage on success, and to zero tokens on a failure (the request
still counts, since the upstream saw it). A cancelled attempt releases its
whole reservation. The window itself is kept by the state store
(``laneway.state``), where replicas share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from laneway.core.messages import estimate_tokens, message_texts
from laneway.core.types import ChatRequest, EmbedRequest, Usage

HELD_PAST_WINDOW = 1.0
"""Seconds a reservation is kept beyond the upstream's ``window``.

A reservation is taken before its request is sent, and the upstream counts
the request when it arrives, milliseconds (or a TLS handshake) later. A slot
reused exactly one window after it was taken can then arrive before the
upstream has let go of it, and is answered 429: ``laneway simulate``
measured those 429s 3-12 ms early (scenarios 1 and 5). One second costs at
most 1/61 of the quota.
"""
UNSIZED_SHARE = 60
"""Without ``rpm``, a request of unknown size reserves a second's worth of ``tpm``."""


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """A source's quota: requests and tokens per ``window`` seconds."""

    rpm: int | None = None
    tpm: int | None = None
    est_tokens: int | None = None
    window: float = 60.0

    @property
    def held_for(self) -> float:
        """How long a reservation counts: the window plus ``HELD_PAST_WINDOW``."""
        return self.window + HELD_PAST_WINDOW

    def reservation(self, request_tokens: int | None) -> int:
        """Tokens to reserve for one attempt, never more than the whole ``tpm``.

        ``est_tokens`` when configured; else the request's estimated size; else
        the request's share of the quota (``tpm / rpm``).
        """
        if self.tpm is None:
            return 0
        if self.est_tokens is not None:
            wanted = self.est_tokens
        elif request_tokens is not None:
            wanted = request_tokens
        else:
            wanted = math.ceil(self.tpm / (self.rpm or UNSIZED_SHARE))
        return min(max(wanted, 1), self.tpm)


def request_tokens(request: ChatRequest | EmbedRequest) -> int:
    """A request's size in tokens, roughly (``estimate_tokens``), plus its ``max_tokens``.

    Token arrays count as their length. Only sizes a reservation: settlement
    replaces it with the real usage.
    """
    if isinstance(request, EmbedRequest):
        texts = [item for item in request.inputs if isinstance(item, str)]
        tokens = sum(len(item) for item in request.inputs if not isinstance(item, str))
        return estimate_tokens(*texts) + tokens
    limit = request.params.get("max_completion_tokens") or request.params.get("max_tokens")
    completion = limit if isinstance(limit, int) else 0
    return estimate_tokens(*message_texts(request.messages)) + completion


def used_tokens(usage: Usage) -> int | None:
    """The tokens an answer says it used, or ``None`` when it did not say."""
    if usage.total_tokens is not None:
        return usage.total_tokens
    if usage.prompt_tokens is None and usage.completion_tokens is None:
        return None
    return (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)
