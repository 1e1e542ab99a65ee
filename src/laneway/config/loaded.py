"""A config file read with the environment beside it, and the hash that names its content.

``read_config`` parses the file and reads the environment beside it; the hash
is what ``/readyz``, ``/metrics`` and ``laneway reload`` report of the config
in force. Checking that it would serve is ``laneway.app.checks``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from laneway.config.load import environment_for, parse_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError

HASH_DIGITS = 12


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
