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
from laneway.server.key_terms import config_budgets
from laneway.state.keys.ledger import KeyRefusal

HEADER_NAMES = {
    "rpm": "requests",
    "tpm": "tokens",
    "max_concurrency": "concurrency",
    "daily_budget": "budget-daily",
    "weekly_budget": "budget-weekly",
    "monthly_budget": "budget-monthly",
    "total_budget": "budget-total",
}
WHAT = {
    "rpm": "requests per minute",
    "tpm": "tokens per minute",
    "max_concurrency": "calls at once",
    "daily_budget": "USD per UTC day",
    "weekly_budget": "USD per ISO week",
    "monthly_budget": "USD per UTC month",
    "total_budget": "USD in all",
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
    """True when a key of laneway.yaml has a budget of any period."""
    return bool(config_budgets(key.name, key.budget))


def unpriced_message(key: str, lane: str, sources: Sequence[str]) -> str:
    return (
        f"key {key!r} has a budget, and lane {lane!r} has sources laneway cannot price "
        f"({', '.join(sources)}); give them a price: block, or set allow_unpriced: true on the key"
    )


def refused(key: str, refusal: KeyRefusal) -> Refused:
    """The 429 for ``refusal``: OpenAI's shape, the limit named (and the team, for a team's
    budget), and when to come back.

    A ``total`` budget never resets: its refusal has no ``Retry-After`` and
    says ``x-should-retry: false``, so an SDK does not retry in vain.
    """
    seconds = max(refusal.seconds, 0.0)
    what = WHAT[refusal.limit]
    cap = _figure(refusal.cap)
    owner = f"key {key!r}" if refusal.team is None else f"team {refusal.team!r} (of key {key!r})"
    message = f"{owner} reached its {refusal.limit} limit ({cap} {what})"
    if refusal.spent is not None:
        message += f"; ${refusal.spent:.6f} spent or reserved in this period"
    name = HEADER_NAMES[refusal.limit]
    if refusal.team is not None:
        name = f"team-{name}"
    headers = [
        (f"x-ratelimit-limit-{name}".encode(), cap.encode()),
        (f"x-ratelimit-remaining-{name}".encode(), b"0"),
    ]
    if math.isinf(seconds):
        message += "; it does not reset: ask for a larger budget"
        headers.append((b"x-should-retry", b"false"))
    else:
        message += f"; retry in {seconds:.1f} s"
        headers += [
            (b"retry-after", str(max(math.ceil(seconds), 1)).encode()),
            (f"x-ratelimit-reset-{name}".encode(), f"{seconds:.3f}s".encode()),
        ]
    kind = "key" if refusal.team is None else "team"
    return Refused(429, f"{kind}_{refusal.limit}_exceeded", message, headers)


def _figure(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
