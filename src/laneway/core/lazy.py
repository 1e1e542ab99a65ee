"""Package attributes imported on first use (PEP 562 module ``__getattr__``).

``laneway serve`` must not pay, in start time or resident memory, for
drivers and libraries a configuration does not use (Redis, PostgreSQL, the
price catalogue, the library facade); packages that re-export such names
build their ``__getattr__`` here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_attributes(
    package: str, homes: Mapping[str, str], submodules: Collection[str] = ()
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` importing each name from its home module.

    ``submodules`` are ``package``'s own modules, imported whole on first use,
    so ``import pkg; pkg.sub.Name`` works without an ``import pkg.sub``.
    """

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    return __getattr__
