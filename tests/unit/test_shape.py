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

from tests.unit.sources import definition_sizes, package_modules

MODULE_LINES = 400
CLASS_LINES = 250
FUNCTION_LINES = 50

OVER: dict[str, int] = {}
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
    sizes = dict(definition_sizes(ast.parse(source)))
    assert sizes == {"class A": 5, "function A.f": 2, "function g": 3, "function g.h": 2}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _circles(graph) == [{"a", "b", "c"}]


def _oversized() -> Iterator[tuple[str, int]]:
    """Each module, class and function of ``laneway`` over its limit, with its size."""
    for module in package_modules():
        if module.lines > MODULE_LINES:
            yield f"module {module.dotted}", module.lines
        for definition, size in module.sizes:
            kind, name = definition.split(" ", 1)
            if size > (CLASS_LINES if kind == "class" else FUNCTION_LINES):
                yield f"{kind} {module.dotted}:{name}", size


def _import_graph() -> dict[str, set[str]]:
    """Which ``laneway`` modules each one imports when it runs (not under ``TYPE_CHECKING``),
    at its top or inside a function: a lazy import closes a circle as well when it runs."""
    names = {module.dotted for module in package_modules()}
    graph: dict[str, set[str]] = {}
    for module in package_modules():
        imported: set[str] = set()
        for base, members in module.imports:
            if not members:
                imported.add(base)
            for member in members:
                child = f"{base}.{member}"
                imported.add(child if child in names else base)
        graph[module.dotted] = (imported & names) - {module.dotted}
    return graph


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
