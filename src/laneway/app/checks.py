"""Whether a config would serve: what ``serve``, a reload and ``laneway reload`` check first.

``check_config`` builds every lane, the keys and the bind rule from a read
config (``laneway.config.loaded``) without opening any connection, so a
config that would fail to serve is refused before anything serving changes.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from laneway.app.lanes import build_lanes
from laneway.cache.factory import REDIS_SCHEMES
from laneway.config.loaded import LoadedConfig
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.core.extras import require
from laneway.server.keys import KeyRing
from laneway.serving.settings import connection_limits
from laneway.telemetry.factory import POSTGRES_SCHEMES


@dataclass(frozen=True, slots=True)
class Bind:
    """Where the server listens, and whether ``--insecure`` lets a keyless gateway off loopback."""

    host: str
    insecure: bool = False


def check_config(loaded: LoadedConfig, bind: Bind | None = None) -> None:
    """Build what serving ``loaded`` builds first, opening nothing; raise ``ConfigError``.

    Every lane (adapters, policies), the keys, the drivers the state, cache
    and telemetry URLs need (``drivers_needed``), and, given the ``bind``, the
    rule that a keyless gateway stays on loopback. ``laneway check`` runs it
    too, so it and ``serve`` give one verdict.
    """
    config, environ = loaded.config, loaded.environ
    try:
        build_lanes(config, environ)
        KeyRing(config.server.keys, list(config.lanes), environ, config.aliases)
        connection_limits(config.server)
    except ConfigError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{loaded.path}: {exc}") from exc
    for module, needed_by in drivers_needed(config):
        require(module, needed_by)
    if bind is not None:
        refusal = bind_refusal(bind.host, keyed=bool(config.server.keys), insecure=bind.insecure)
        if refusal is not None:
            raise ConfigError(refusal)


def drivers_needed(config: LanewayConfig) -> list[tuple[str, str]]:
    """The optional drivers ``config`` needs, each with the setting that needs it."""
    needed = []
    if config.state.url is not None:
        needed.append(("redis", "state.url (Redis)"))
    if config.cache.url is not None and urlsplit(config.cache.url).scheme in REDIS_SCHEMES:
        needed.append(("redis", "cache.url (Redis)"))
    if urlsplit(config.telemetry.url).scheme in POSTGRES_SCHEMES:
        needed.append(("asyncpg", "telemetry.url (PostgreSQL)"))
    return needed


def bind_refusal(host: str, *, keyed: bool, insecure: bool) -> str | None:
    """Why listening on ``host`` is refused, or ``None``: a keyless gateway stays on loopback."""
    if keyed or insecure or is_loopback(host):
        return None
    return (
        f"refusing to listen on {host}: no server.keys are configured, so anyone who can "
        "reach this address could spend your upstream keys; configure server.keys, "
        "bind a loopback address, or pass --insecure"
    )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
