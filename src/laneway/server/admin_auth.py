"""Who may use the admin API: the ``server.admin_keys`` credentials, compared in constant
time, and a bound on failed attempts per client address.

A client that fails ``FAILURES`` times within ``WINDOW`` seconds is answered
429 until the oldest failure leaves the window, without its credential being
checked. Every failure is logged with the client's address and the route, never
with what it sent.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from laneway.config.models import AdminKeyConfig
from laneway.server.admin_input import AdminInvalid

log = logging.getLogger("laneway.admin")
FAILURES = 5
WINDOW = 60.0
_CLIENTS_KEPT = 10_000


class AdminAuth:
    """The admin keys as sha256 digests (unset variables authenticate no one)."""

    def __init__(
        self,
        keys: Sequence[AdminKeyConfig],
        environ: Mapping[str, str],
        clock: Callable[[], float],
    ) -> None:
        self._digests: list[tuple[bytes, str]] = []
        for key in keys:
            value = key.key.resolve(environ)
            if value is not None:
                self._digests.append((hashlib.sha256(value.encode()).digest(), key.name))
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def admin(self, headers: Mapping[bytes, bytes], peer: str, route: str) -> str:
        """The name of the admin key the request carries; ``AdminInvalid`` (401/429) else."""
        now = self._clock()
        failures = self._failures.get(peer)
        if failures is not None:
            while failures and failures[0] <= now - WINDOW:
                failures.popleft()
            if len(failures) >= FAILURES:
                wait = math.ceil(failures[0] + WINDOW - now)
                raise AdminInvalid("", f"too many failed attempts; retry in {wait} s", 429)
        token = _token(headers)
        digest = hashlib.sha256(token).digest() if token else b""
        found: str | None = None
        for known, name in self._digests:
            if hmac.compare_digest(known, digest):
                found = name
        if found is None:
            self._failed(peer, now, route, "missing" if not token else "wrong")
            raise AdminInvalid("", "send an admin key as 'Authorization: Bearer <key>'", 401)
        return found

    def _failed(self, peer: str, now: float, route: str, what: str) -> None:
        log.warning("admin API: %s credentials from %s on %s", what, peer, route)
        if len(self._failures) >= _CLIENTS_KEPT and peer not in self._failures:
            self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(peer, deque()).append(now)


def _token(headers: Mapping[bytes, bytes]) -> bytes:
    scheme, _, token = headers.get(b"authorization", b"").strip().partition(b" ")
    return token.strip() if scheme.lower() == b"bearer" else b""
