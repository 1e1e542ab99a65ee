"""The field types of ``laneway.yaml``'s models: durations, sizes, URLs, secrets, retry labels,
and ``Strict``, the base that makes an unknown key an error."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)

from laneway.core.failures import FailureKind, parse_retry_class
from laneway.core.units import parse_duration, parse_size

Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
RetryLabel = int | FailureKind
RetryCount = Annotated[int, Field(ge=1, le=20)]

_NETWORK_SCHEMES = frozenset({"http", "https", "redis", "rediss", "postgresql", "postgres"})


def network_url(url: str) -> str:
    """``url`` if it is well formed: a host for network schemes, a port in 1-65535.

    Checked where the config is read, so ``laneway check`` and ``laneway
    serve`` refuse a bad URL with the same message, before anything connects.
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r}: the port must be a number from 1 to 65535") from exc
    if parts.scheme in _NETWORK_SCHEMES and not parts.hostname:
        raise ValueError(f"{url!r}: names no host")
    if port == 0:
        raise ValueError(f"{url!r}: the port must be a number from 1 to 65535")
    return url


def _maybe_network_url(url: str) -> str:
    """A path or ``none`` passes as it is; a URL with a scheme is checked (``network_url``)."""
    return network_url(url) if "://" in url else url


NetworkUrl = Annotated[str, AfterValidator(network_url)]
MaybeNetworkUrl = Annotated[str, AfterValidator(_maybe_network_url)]

_ENV_REF = re.compile(r"^(?:os\.environ/([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\})$")


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret: a reference to an environment variable, or a literal value.

    ``repr`` never shows a literal, so a secret cannot leak through logs.
    """

    env: str | None = None
    literal: str | None = None

    @classmethod
    def parse(cls, text: object) -> Secret:
        """Read ``os.environ/NAME``, ``${NAME}`` or a literal string."""
        if isinstance(text, Secret):
            return text
        if not isinstance(text, str) or not text:
            raise ValueError("a secret must be a non-empty string")
        match = _ENV_REF.match(text)
        if match is None:
            return cls(literal=text)
        return cls(env=match.group(1) or match.group(2))

    def resolve(self, environ: Mapping[str, str]) -> str | None:
        """The secret's value, or ``None`` when its variable is unset or empty."""
        if self.literal is not None:
            return self.literal
        assert self.env is not None
        return environ.get(self.env) or None

    def __repr__(self) -> str:
        return f"Secret(env={self.env!r})" if self.env else "Secret(<literal>)"


SecretField = Annotated[Secret, BeforeValidator(Secret.parse)]


def _retry_label(label: object) -> int | FailureKind:
    """One ``retry_on`` entry: an HTTP status, or a retried ``FailureKind`` named as itself."""
    if isinstance(label, int) and not isinstance(label, bool):
        return label
    if isinstance(label, str) and label.isdigit():
        return int(label)
    if isinstance(label, str):
        return parse_retry_class(label)
    raise ValueError(f"{label!r} is neither an HTTP status nor a failure kind")


def retry_labels(value: object) -> object:
    """``retry_on`` with every entry read by ``_retry_label``: one clear error per bad entry."""
    if isinstance(value, list):
        return [_retry_label(label) for label in value]
    if isinstance(value, dict):
        return {_retry_label(label): count for label, count in value.items()}
    return value


class Strict(BaseModel):
    """Base of every config model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
