"""The ``laneway`` package's own source, parsed once for every test that reads it."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import laneway

PACKAGE = Path(laneway.__file__).parent


@dataclass(frozen=True)
class SourceModule:
    """One module of the package: its dotted name, the parts of that name, and its syntax tree."""

    name: str
    parts: tuple[str, ...]
    tree: ast.Module


@functools.cache
def package_modules() -> tuple[SourceModule, ...]:
    """Every module under ``src/laneway``, sorted by path.

    Parsing the whole package takes about half a second; the tests that read
    it share one parse. Read-only: callers must not change the trees.
    """
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("laneway", *path.relative_to(PACKAGE).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules.append(SourceModule(".".join(parts), parts, tree))
    return tuple(modules)
