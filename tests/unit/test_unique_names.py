"""Each public class and function name of ``laneway`` is defined in one module only.

Two things of one name (two ``CallRecord``s, two ``judge``s) make a reader,
a grep and an import guess which one is meant. A name is public when it does
not start with ``_`` and its module's path has no ``_``-prefixed part: the
simulator's private modules (``laneway.sim._*``) stand alone by contract (they
may not import laneway), so they name their own fakes of what they imitate.
"""

from __future__ import annotations

from collections import defaultdict

from tests.unit.sources import package_modules

ENTRY_POINTS = frozenset({"main", "parser"})
"""Every ``laneway <command>`` module exposes ``main(argv)`` (and, when other
commands reuse its options, ``parser()``): ``laneway.cli.main`` dispatches to
``<command>.main`` by that convention, as ``python -m`` does for
``laneway.chaos.replica``. The module, not the name, says which command."""


def public_definitions() -> dict[str, set[str]]:
    """Each public top-level class or function name, with the modules defining it.

    A module counts once per name: ``@overload`` signatures are one function.
    """
    found: dict[str, set[str]] = defaultdict(set)
    for module in package_modules():
        if any(part.startswith("_") and part != "__init__" for part in module.parts):
            continue
        for name in module.top_level:
            if not name.startswith("_"):
                found[name].add(module.name)
    return found


def test_no_two_modules_define_the_same_public_name() -> None:
    twice = {
        name: sorted(modules)
        for name, modules in public_definitions().items()
        if len(modules) > 1 and name not in ENTRY_POINTS
    }
    assert twice == {}


def test_the_entry_point_exemption_covers_command_modules_only() -> None:
    for name in ENTRY_POINTS:
        for module in public_definitions().get(name, []):
            assert module.startswith(("laneway.cli.", "laneway.chaos.replica")), module
