"""``value``: a frozen dataclass the type checker enforces, built at a plain ``__init__``'s cost.

A ``@dataclass(frozen=True)``'s ``__init__`` sets each field through
``object.__setattr__`` (its own ``__setattr__`` refuses), one Python-level call
per field; a ``lw.chat()`` builds about a dozen such values, some 60 fields.
``value`` makes a slotted dataclass with an ordinary ``__init__`` (one
``STORE_ATTR`` a field) and the equality and hash a frozen one has, and tells
the type checker (PEP 681 ``frozen_default``) that it is frozen: assigning a
field anywhere in laneway or its tests fails ``mypy --strict``, which the
check runs. At run time nothing refuses the assignment, so ``value`` is for
the engine's own per-call values; the public types callers hold (``Usage``,
``Attempt``) and shared constants stay ``frozen=True``.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def value(cls: type[T]) -> type[T]:
    """``cls`` as a slotted dataclass, frozen to the type checker, with a frozen one's hash."""
    return dataclasses.dataclass(slots=True, unsafe_hash=True)(cls)
