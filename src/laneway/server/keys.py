"""Callers' keys: who is calling, and which lanes they may use.

A key comes as ``Authorization: Bearer <key>`` (OpenAI's SDKs) or as
``x-api-key: <key>`` (Anthropic's); the bearer form wins when both are sent.

Keys are held only as sha256 digests and compared with ``hmac.compare_digest``
on digests of equal length, so neither the key nor its length shows in the
timing. With no ``server.keys`` configured the gateway is open (and ``laneway
serve`` binds loopback only).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import orjson

from laneway.config.models import KeyConfig
from laneway.core.records import CallMeta
from laneway.server.errors import Refused

if TYPE_CHECKING:
    from laneway.server.key_terms import KeyTerms, SpentBefore

_BEARER = b"bearer"


class StoredLookup(Protocol):
    """The key store's keys as this process last read them (``server.stored_keys``)."""

    def caller(self, digest: bytes) -> Caller | None:
        """The caller whose usable key has sha256 ``digest``, else ``None``."""


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller; ``lanes`` keeps the config's order for listings.

    ``aliases`` are the model names that reach a permitted lane under another name.
    """

    name: str | None
    lanes: tuple[str, ...]
    allowed: frozenset[str]
    models_body: bytes
    meta: CallMeta
    aliases: Mapping[str, str] = field(default_factory=dict)
    limits: KeyTerms | None = None
    """A stored key's limits (a configured key's are found by its name)."""
    spent_before: SpentBefore | None = None
    """What a stored key spent before laneway counted it (an imported LiteLLM key's spend)."""

    def may_use(self, lane: str) -> bool:
        """True when this caller's key permits ``lane``."""
        return lane in self.allowed


def make_caller(
    name: str | None,
    lanes: Sequence[str],
    aliases: Mapping[str, str] | None = None,
    limits: KeyTerms | None = None,
    spent_before: SpentBefore | None = None,
) -> Caller:
    """A caller permitted ``lanes`` (and the aliases of those), with its ``GET /v1/models``
    answer rendered once: each alias is listed as such, with ``alias_of`` its lane."""
    permitted = {a: lane for a, lane in (aliases or {}).items() if lane in lanes}
    models: list[dict[str, object]] = [_model(n) for n in lanes]
    models += [{**_model(a), "alias_of": lane} for a, lane in permitted.items()]
    body = orjson.dumps({"object": "list", "data": models})
    meta = CallMeta(caller=name)
    return Caller(name, tuple(lanes), frozenset(lanes), body, meta, permitted, limits, spent_before)


def model_body(name: str, alias_of: str | None = None) -> bytes:
    """The ``GET /v1/models/{id}`` answer for a lane, or an alias (``alias_of`` its lane)."""
    model = _model(name)
    return orjson.dumps(model if alias_of is None else {**model, "alias_of": alias_of})


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "laneway"}


class KeyRing:
    """The configured keys as digests; ``problems`` names keys that cannot work."""

    def __init__(
        self,
        keys: Sequence[KeyConfig],
        lanes: Sequence[str],
        environ: Mapping[str, str],
        aliases: Mapping[str, str] | None = None,
        stored: StoredLookup | None = None,
    ) -> None:
        self.open = not keys and stored is None
        self.stored = stored
        self.problems: list[str] = []
        self._everyone = make_caller(None, lanes, aliases)
        self._entries: list[tuple[bytes, Caller]] = []
        for key in keys:
            digest = self._digest(key, environ)
            if digest is not None:
                permitted = lanes if "*" in key.lanes else [n for n in lanes if n in key.lanes]
                self._entries.append((digest, make_caller(key.name, permitted, aliases)))

    def _digest(self, key: KeyConfig, environ: Mapping[str, str]) -> bytes | None:
        if key.sha256 is not None:
            return bytes.fromhex(key.sha256)
        assert key.key is not None
        value = key.key.resolve(environ)
        if value is None:
            self.problems.append(
                f"key {key.name}: environment variable {key.key.env} is unset; "
                "the key authenticates no one"
            )
            return None
        return hashlib.sha256(value.encode()).digest()

    def caller(self, headers: Mapping[bytes, bytes]) -> Caller:
        """The caller the request's key names; ``Refused`` (401) otherwise."""
        if self.open:
            return self._everyone
        token = _bearer_token(headers.get(b"authorization")) or headers.get(b"x-api-key")
        if not token:
            message = "send your key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
            raise Refused(401, "missing_api_key", message)
        digest = hashlib.sha256(token).digest()
        found: Caller | None = None
        for known, caller in self._entries:
            if hmac.compare_digest(known, digest):
                found = caller
        if found is None and self.stored is not None:
            found = self.stored.caller(digest)
        if found is None:
            raise Refused(401, "invalid_api_key", "the API key is not valid")
        return found


def _bearer_token(authorization: bytes | None) -> bytes | None:
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(b" ")
    token = token.strip()
    if scheme.lower() != _BEARER or not token:
        return None
    return token
