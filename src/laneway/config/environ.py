"""Environment references in every string setting, resolved once where the file is loaded.

``os.environ/NAME`` (the whole value) and ``${NAME}`` (anywhere in a value)
read the environment the config loads in: the process's over a ``.env``
beside the file. URLs, hosts, paths, model names: any string in any section.
A reference to a variable unset or empty is a ``ConfigError`` naming the file,
line and field, so ``laneway check`` and ``laneway serve`` refuse it alike,
before anything opens a file or a connection.

Secrets (a source's ``api_key``, a server key's ``key``) are left as written:
``Secret`` keeps the variable's name, so ``repr`` and ``check`` never show its
value, ``each_key`` reads the numbered variables, and the redactor resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_WHOLE = re.compile(r"^os\.environ/([A-Za-z_][A-Za-z0-9_]*)$")
_EMBEDDED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SECRET_FIELDS = frozenset({"api_key", "key"})
"""Field names read as ``Secret``: their references resolve where they are used."""

Loc = tuple[str | int, ...]
Unresolved = Callable[[Loc, str], None]


def resolve_references(data: Any, environ: Mapping[str, str], unresolved: Unresolved) -> Any:
    """``data`` with every reference in its strings replaced by the variable's value.

    ``unresolved(loc, name)`` is told of each reference whose variable is unset
    or empty (the reference is then left as written).
    """
    return _resolve(data, (), environ, unresolved)


def _resolve(data: Any, loc: Loc, environ: Mapping[str, str], unresolved: Unresolved) -> Any:
    if isinstance(data, dict):
        return {k: _resolve(v, (*loc, k), environ, unresolved) for k, v in data.items()}
    if isinstance(data, list):
        return [_resolve(v, (*loc, i), environ, unresolved) for i, v in enumerate(data)]
    if not isinstance(data, str) or (loc and loc[-1] in SECRET_FIELDS):
        return data
    return _substitute(data, loc, environ, unresolved)


def _substitute(text: str, loc: Loc, environ: Mapping[str, str], unresolved: Unresolved) -> str:
    whole = _WHOLE.match(text)
    if whole is not None:
        value = environ.get(whole.group(1))
        if not value:
            unresolved(loc, whole.group(0))
        return value or text

    def one(match: re.Match[str]) -> str:
        value = environ.get(match.group(1))
        if not value:
            unresolved(loc, match.group(0))
        return value or match.group(0)

    return _EMBEDDED.sub(one, text)
