"""Optional drivers: a config that needs one not installed gets an error naming the extra.

``pip install laneway`` brings what an embedded gateway needs (SQLite
telemetry, in-process state); Redis and PostgreSQL drivers are extras, so a
deployment installs only what its config names.
"""

from __future__ import annotations

import importlib.util

from laneway.core.errors import ConfigError

EXTRA_OF = {"redis": "redis", "asyncpg": "postgres"}
"""Driver module -> the ``laneway[...]`` extra that installs it."""


def require(module: str, needed_by: str) -> None:
    """Raise ``ConfigError`` when ``module`` is not installed (``needed_by`` says what wants it)."""
    if importlib.util.find_spec(module) is None:
        extra = EXTRA_OF[module]
        raise ConfigError(
            f"{needed_by} needs the {module} driver, which is not installed: "
            f"pip install 'laneway[{extra}]'"
        )
