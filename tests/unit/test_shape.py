"""The code's shape, measured: short modules, classes and functions, and no import circle.

The house rules (``/work/shared/design/house-style.md``, issue 25): no module
over 400 lines, no class over 250, no function over 50, measured with
``ast`` (a definition's first line to its last, docstring included), and no
circle in the import graph of ``laneway``'s modules. What was over a limit
when the rule became a test is listed in ``OVER``, with its size then: an
entry may only shrink, and goes when it is within the limit, so nothing new
is added over a limit while the old ones are split.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

MODULE_LINES = 400
CLASS_LINES = 250
FUNCTION_LINES = 50

OVER: dict[str, int] = {
    "class laneway.engine.decision:CallDecision": 271,
    "class laneway.telemetry.writer:TelemetryWriter": 284,
}
"""Over a limit when this test was written (issue 25's shape target), each with its size then."""


def test_nothing_new_is_over_a_limit_and_nothing_listed_grew() -> None:
    sizes = dict(_oversized())
    new = {name: size for name, size in sizes.items() if name not in OVER}
    assert not new, f"over the house limits (module {MODULE_LINES}, class {CLASS_LINES}, "
    f"function {FUNCTION_LINES} lines): split them: {new}"
    grew = {name: (OVER[name], size) for name, size in sizes.items() if size > OVER.get(name, 0)}
    assert not grew, f"listed as over a limit, and grown since (was, now): {grew}"


def test_what_is_listed_as_over_a_limit_still_is() -> None:
    sizes = dict(_oversized())
    within = sorted(name for name in OVER if name not in sizes)
    assert not within, f"now within the limits: remove from OVER in {__file__}: {within}"


def test_no_import_circle_within_laneway() -> None:
    circles = _circles(_import_graph())
    assert not circles, f"modules that import each other (directly or through others): {circles}"


def test_the_shape_measures_what_it_says() -> None:
    source = (
        'class A:\n    """Doc."""\n\n    def f(self) -> None:\n        pass\n\n'
        "def g() -> None:\n    def h() -> None:\n        pass\n"
    )
    sizes = dict(_definitions("m", ast.parse(source)))
    assert sizes == {"class m:A": 5, "function m:A.f": 2, "function m:g": 3, "function m:g.h": 2}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _circles(graph) == [{"a", "b", "c"}]


def _oversized() -> Iterator[tuple[str, int]]:
    """Each module, class and function of ``laneway`` over its limit, with its size."""
    for name, (lines, tree) in _parsed().items():
        if lines > MODULE_LINES:
            yield f"module {name}", lines
        for definition, size in _definitions(name, tree):
            limit = CLASS_LINES if definition.startswith("class") else FUNCTION_LINES
            if size > limit:
                yield definition, size


def _definitions(module: str, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every class and function in ``tree`` (nested ones too) with its length in lines."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        parent, prefix = stack.pop()
        for node in _statements(parent):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                name = f"{prefix}{node.name}"
                yield f"{kind} {module}:{name}", node.end_lineno - node.lineno + 1
                stack.append((node, f"{name}."))
            else:
                stack.append((node, prefix))


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """The statements directly inside ``node`` (and its ``except`` and ``case`` clauses):
    definitions and imports are statements, so expressions need no walking."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
            yield child


@cache
def _modules() -> dict[str, Path]:
    """Every module of ``laneway`` by its dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted((SRC / "laneway").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@cache
def _parsed() -> dict[str, tuple[int, ast.Module]]:
    """Each module's length in lines and its syntax tree, read once for every test here."""
    parsed: dict[str, tuple[int, ast.Module]] = {}
    for name, path in _modules().items():
        text = path.read_text()
        parsed[name] = len(text.splitlines()), ast.parse(text)
    return parsed


def _import_graph() -> dict[str, set[str]]:
    """Which ``laneway`` modules each one imports when it runs (not under ``TYPE_CHECKING``),
    at its top or inside a function: a lazy import closes a circle as well when it runs."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, (_, tree) in _parsed().items():
        package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = set(_imported(tree, package, modules)) - {name}
    return graph


def _imported(tree: ast.AST, package: str, modules: dict[str, Path]) -> Iterator[str]:
    stack = [tree]
    while stack:
        for node in _statements(stack.pop()):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                stack.extend(node.orelse)
            elif isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                yield from _imported_from(node, package, modules)
            else:
                stack.append(node)


def _imported_from(node: ast.ImportFrom, package: str, modules: dict[str, Path]) -> Iterator[str]:
    """The modules ``from X import a, b`` loads: ``X.a`` where it is a module, else ``X``."""
    base = node.module or ""
    if node.level:
        anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        base = f"{anchor}.{base}" if base else anchor
    for alias in node.names:
        child = f"{base}.{alias.name}"
        if child in modules:
            yield child
        elif base in modules:
            yield base


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(members)
    return circles
