"""The classes, functions, imports and calls of the ``laneway`` package, read from its source once.

Read from the source (no import), so optional extras need not be installed.
Each module's syntax tree is summarised and dropped as soon as it is read:
the whole package's trees hold about a million nodes, which would cost every
later full garbage collection of the run a walk through them.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
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
    lines: int
    sizes: tuple[tuple[str, int], ...]
    """Every class and function (nested ones too) as ``class A`` or ``function A.f``, with its
    length in lines, its docstring included."""
    imports: tuple[tuple[str, tuple[str, ...]], ...]
    """What it imports when it runs (not under ``TYPE_CHECKING``), at its top or in a function:
    ``(module, ())`` for ``import module``, ``(package, names)`` for ``from package import
    names`` (relative imports resolved)."""
    calls: tuple[tuple[str, int], ...]
    """Each call's callee by its last name (``Pricer.for_lanes(...)`` is ``for_lanes``) and line."""

    @property
    def dotted(self) -> str:
        """The name it is imported by (``laneway.x`` for ``laneway/x/__init__.py``)."""
        return ".".join(self.parts[:-1] if self.parts[-1] == "__init__" else self.parts)


@functools.cache
def package_modules() -> tuple[SourceModule, ...]:
    """Every module under ``src/laneway``, sorted by path (parsed once per test run)."""
    return tuple(_read(path) for path in sorted(PACKAGE.rglob("*.py")))


def _read(path: Path) -> SourceModule:
    parts = ("laneway", *path.relative_to(PACKAGE).with_suffix("").parts)
    return summarize(parts, path.read_text(encoding="utf-8"))


def summarize(parts: tuple[str, ...], text: str) -> SourceModule:
    """The module ``parts`` names, of source ``text``, summarised (its tree is not kept)."""
    tree = ast.parse(text)
    definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    top_level = tuple(node.name for node in tree.body if isinstance(node, definition))
    classes: list[ClassDefinition] = []
    calls: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = frozenset(ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases)
            classes.append(ClassDefinition(node.name, bases))
        elif isinstance(node, ast.Call):
            func = node.func
            callee = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if callee is not None:
                calls.append((callee, node.lineno))
    package = parts[:-1]  # a package's own imports are relative to it, as a module's to its
    return SourceModule(
        ".".join(parts),
        parts,
        top_level,
        tuple(classes),
        lines=len(text.splitlines()),
        sizes=tuple(definition_sizes(tree)),
        imports=tuple(_imports(tree, ".".join(package))),
        calls=tuple(calls),
    )


def definition_sizes(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every class and function in ``tree``, nested ones too, with its length in lines."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        parent, prefix = stack.pop()
        for node in _statements(parent):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                yield f"{kind} {prefix}{node.name}", node.end_lineno - node.lineno + 1
                stack.append((node, f"{prefix}{node.name}."))
            else:
                stack.append((node, prefix))


def _imports(tree: ast.AST, package: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    stack = [tree]
    while stack:
        for node in _statements(stack.pop()):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                stack.extend(node.orelse)
            elif isinstance(node, ast.Import):
                yield from ((alias.name, ()) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                yield base, tuple(alias.name for alias in node.names)
            else:
                stack.append(node)


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """The statements directly inside ``node`` (and its ``except`` and ``case`` clauses):
    definitions and imports are statements, so expressions need no walking."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
            yield child


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
