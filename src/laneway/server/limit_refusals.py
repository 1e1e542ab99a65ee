"""What a key's limit says when it refuses a call, and which budgeted keys a lane refuses.

The ``429`` of a passed limit names the limit, its figure and when to come
back (``Retry-After`` and ``X-RateLimit-*``, as OpenAI sends them); a
budgeted key on a lane laneway cannot price is refused with ``403`` before
any estimate (``laneway.server.limits``), and ``laneway check`` lists those
pairs ahead of time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from laneway.config.models import KeyConfig
from laneway.server.errors import Refused
from laneway.state.keys.ledger import KeyRefusal

HEADER_NAMES = {
    "rpm": "requests",
    "tpm": "tokens",
    "max_concurrency": "concurrency",
    "daily_budget": "budget-daily",
    "monthly_budget": "budget-monthly",
}
WHAT = {
    "rpm": "requests per minute",
    "tpm": "tokens per minute",
    "max_concurrency": "calls at once",
    "daily_budget": "USD per UTC day",
    "monthly_budget": "USD per UTC month",
}


def chain_unpriced(unpriced: Mapping[str, Sequence[str]], chain: Sequence[str]) -> list[str]:
    """The unpriced sources of a lane's ``chain`` (``unpriced`` by lane), the first lane's as
    named, its fallback lanes' as ``lane/source``."""
    first = chain[0]
    return [s if name == first else f"{name}/{s}" for name in chain for s in unpriced[name]]


def unpriced_pairs(
    keys: Iterable[KeyConfig], unpriced: Mapping[str, Sequence[str]]
) -> list[tuple[str, str, list[str]]]:
    """(key, lane, unpriced sources) for each budgeted key refused on a lane it may use."""
    pairs = []
    for key in keys:
        if not budgeted(key) or key.allow_unpriced:
            continue
        for lane, sources in unpriced.items():
            if sources and ("*" in key.lanes or lane in key.lanes):
                pairs.append((key.name, lane, list(sources)))
    return pairs


def budgeted(key: KeyConfig) -> bool:
    budget = key.budget
    return budget is not None and (budget.daily is not None or budget.monthly is not None)


def unpriced_message(key: str, lane: str, sources: Sequence[str]) -> str:
    return (
        f"key {key!r} has a budget, and lane {lane!r} has sources laneway cannot price "
        f"({', '.join(sources)}); give them a price: block, or set allow_unpriced: true on the key"
    )


def refused(key: str, refusal: KeyRefusal) -> Refused:
    """The 429 for ``refusal``: OpenAI's shape, the limit named, and when to come back."""
    seconds = max(refusal.seconds, 0.0)
    what = WHAT[refusal.limit]
    cap = _figure(refusal.cap)
    message = f"key {key!r} reached its {refusal.limit} limit ({cap} {what})"
    if refusal.spent is not None:
        message += f"; ${refusal.spent:.6f} spent or reserved in this period"
    message += f"; retry in {seconds:.1f} s"
    name = HEADER_NAMES[refusal.limit]
    headers = [
        (b"retry-after", str(max(math.ceil(seconds), 1)).encode()),
        (f"x-ratelimit-limit-{name}".encode(), cap.encode()),
        (f"x-ratelimit-remaining-{name}".encode(), b"0"),
        (f"x-ratelimit-reset-{name}".encode(), f"{seconds:.3f}s".encode()),
    ]
    return Refused(429, f"key_{refusal.limit}_exceeded", message, headers)


def _figure(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
