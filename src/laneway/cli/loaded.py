"""A config file read and checked the one way ``serve``, a reload and ``laneway reload`` do.

``read_config`` parses the file and reads the environment beside it;
``check_config`` builds every lane, the keys and the bind rule from it without
opening any connection, so a config that would fail to serve is refused
before anything serving changes. The hash names the file's content: it is
what ``/readyz``, ``/metrics`` and ``laneway reload`` report of the config in
force.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from laneway.app import build_lanes
from laneway.cache.factory import REDIS_SCHEMES
from laneway.config.load import environment_for, parse_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.core.extras import require
from laneway.server.keys import KeyRing
from laneway.server.run import connection_limits
from laneway.telemetry.factory import POSTGRES_SCHEMES

HASH_DIGITS = 12
RESTART_ONLY = (
    "host",
    "port",
    "header_timeout",
    "body_timeout",
    "keepalive_timeout",
    "max_header_bytes",
    "max_headers",
    "max_connections",
    "worker_snapshot_interval",
    "metrics",
)
"""``server:`` settings the listening socket and its connections were made with, the
metrics snapshots' timer, which runs from the worker's start, and whether calls are
counted for ``/metrics`` (the process's record feed is made with its first config)."""


def config_hash(text: bytes) -> str:
    """The first ``HASH_DIGITS`` hex digits of the file's SHA-256."""
    return hashlib.sha256(text).hexdigest()[:HASH_DIGITS]


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A config file's text, its validated model, and the environment it resolves in."""

    path: Path
    text: bytes
    config: LanewayConfig
    environ: dict[str, str]

    @property
    def hash(self) -> str:
        """See ``config_hash``."""
        return config_hash(self.text)


def read_config(path: Path, text: bytes | None = None) -> LoadedConfig:
    """Parse the file at ``path`` (or ``text``, read from it before) with its ``.env``.

    Raises ``ConfigError`` naming the file, line and key of what is wrong.
    """
    if text is None:
        try:
            text = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    environ = environment_for(path)
    config = parse_config(decoded, origin=str(path), environ=environ)
    return LoadedConfig(path, text, config, environ)


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


def restart_only_changes(old: LanewayConfig, new: LanewayConfig) -> list[str]:
    """The settings that differ between ``old`` and ``new`` and apply only after a restart."""
    changed = [
        f"server.{name}"
        for name in RESTART_ONLY
        if getattr(old.server, name) != getattr(new.server, name)
    ]
    if old.telemetry != new.telemetry:
        changed.append("telemetry")
    return changed


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
