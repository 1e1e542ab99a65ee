"""The classes and functions the ``laneway`` package defines, read from its source once.

Read from the source (no import), so optional extras need not be installed.
Each module's syntax tree is summarised and dropped as soon as it is read:
the whole package's trees hold about a million nodes, which would cost every
later full garbage collection of the run a walk through them.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import laneway

PACKAGE = Path(laneway.__file__).parent


@dataclass(frozen=True)
class ClassDefinition:
    """A class statement: its name and the last dotted part of each base (``errors.X`` is ``X``)."""

    name: str
    bases: frozenset[str]


@dataclass(frozen=True)
class SourceModule:
    """One module of the package, as its source defines it."""

    name: str
    """Dotted, from the path (``laneway.core.errors``; a package's is ``laneway.x.__init__``)."""
    parts: tuple[str, ...]
    top_level: tuple[str, ...]
    """The names of its top-level classes and (async) functions, in source order."""
    classes: tuple[ClassDefinition, ...]
    """Every class statement in it, nested ones included."""


@functools.cache
def package_modules() -> tuple[SourceModule, ...]:
    """Every module under ``src/laneway``, sorted by path (parsed once per test run)."""
    return tuple(_read(path) for path in sorted(PACKAGE.rglob("*.py")))


def _read(path: Path) -> SourceModule:
    parts = ("laneway", *path.relative_to(PACKAGE).with_suffix("").parts)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    top_level = tuple(node.name for node in tree.body if isinstance(node, definition))
    classes = tuple(
        ClassDefinition(
            node.name, frozenset(ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases)
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    )
    return SourceModule(".".join(parts), parts, top_level, classes)
