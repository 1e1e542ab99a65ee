"""The secret values a configuration holds, for ``laneway.core.redact.Redactor``.

Upstream keys, server keys and admin keys (literal or from the environment) and
the passwords in the ``state``, ``telemetry``, ``cache`` and ``server.key_store``
URLs: what must never leave the gateway in any text it emits.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

from laneway.config.models import LanewayConfig
from laneway.core.redact import STORED_KEY_PATTERN, Redactor


def configured_secrets(config: LanewayConfig, environ: Mapping[str, str]) -> list[str]:
    """Every secret value ``config`` resolves to in ``environ`` (unset ones are skipped)."""
    keys = [source.api_key for lane in config.lanes.values() for source in lane.sources]
    keys += [key.key for key in config.server.keys]
    keys += [key.key for key in config.server.admin_keys]
    keys.append(config.server.alerts.webhook)
    values = [key.resolve(environ) for key in keys if key is not None]
    urls = (config.state.url, config.telemetry.url, config.cache.url, config.server.key_store)
    values += [password for url in urls if url for password in url_passwords(url)]
    return [value for value in values if value]


def secret_patterns(config: LanewayConfig) -> list[str]:
    """The shapes of secrets ``config`` may meet but holds no value of: stored keys'."""
    server = config.server
    return [STORED_KEY_PATTERN] if server.key_store is not None or server.admin_keys else []


def redactor_for(config: LanewayConfig, environ: Mapping[str, str]) -> Redactor:
    """The redactor of every secret of ``config``."""
    return Redactor(configured_secrets(config, environ), secret_patterns(config))


def url_passwords(url: str) -> list[str]:
    """The passwords a URL carries, decoded: ``scheme://user:password@host``, ``?password=``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [] if password is None else [unquote(password)]
    return found + [value for key, value in parse_qsl(parts.query) if key == "password"]
