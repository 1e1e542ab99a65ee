"""The public surface, pinned: a name added to or dropped from ``laneway`` is a deliberate change.

``PUBLIC`` below is the surface as released. Changing it means changing this
list in the same commit, which a reviewer sees; every name must import, every
error of the tree must be exported, and every class of ``laneway.core.types``
is either public or named here as internal, with why.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing

import laneway
import laneway.batch
import laneway.errors
from laneway.core import errors as core_errors
from laneway.core import types as core_types
from tests.unit.sources import package_modules

PUBLIC = [
    "Attempt",
    "BatchStopped",
    "CacheUnavailable",
    "CallFailed",
    "ChatChunk",
    "ChatMessage",
    "ChatStream",
    "ConfigError",
    "ContextLengthExceeded",
    "DeadlineExceeded",
    "DimensionMismatch",
    "EmbeddingResponse",
    "JobMismatch",
    "LLMResponse",
    "LaneNotReady",
    "Laneway",
    "LanewayConfig",
    "LanewayError",
    "OCRResponse",
    "PushbackRefused",
    "Reasoning",
    "RequestInvalid",
    "RequestTooLarge",
    "ResponseTooLarge",
    "ResultInvalid",
    "Stalled",
    "StreamInterrupted",
    "StructuredResponse",
    "TelemetryError",
    "UnknownLane",
    "UpstreamFailed",
    "UpstreamRejected",
    "UpstreamTimeout",
    "Usage",
    "gather_bounded",
]

INTERNAL_TYPES = {
    "ChatRequest": "the library takes messages and keyword parameters, not a request object",
    "EmbedRequest": "the library takes texts and keyword parameters, not a request object",
}
"""Classes of ``laneway.core.types`` that are not part of the public surface, and why."""

INTERNAL_ERRORS = {
    "AttemptFailure": "one attempt's failure inside the call loop; callers see ``Attempt`` entries",
    "Inexpressible": "an AttemptFailure: a source skipped for a request its format cannot carry",
}


def test_all_is_sorted_unique_and_pinned() -> None:
    assert laneway.__all__ == sorted(set(laneway.__all__))
    assert laneway.__all__ == PUBLIC


def test_every_public_name_imports() -> None:
    for name in laneway.__all__:
        assert getattr(laneway, name) is not None, name
    assert set(laneway.__all__) <= set(dir(laneway))


def test_star_import_gives_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from laneway import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(laneway.__all__)


def test_the_errors_module_exports_the_whole_tree_and_laneway_too() -> None:
    tree = {
        name
        for name, value in vars(core_errors).items()
        if inspect.isclass(value) and issubclass(value, core_errors.LanewayError)
    }
    assert laneway.errors.__all__ == sorted(tree)
    for name in laneway.errors.__all__:
        assert getattr(laneway, name) is getattr(laneway.errors, name) is getattr(core_errors, name)
    assert set(vars(core_errors)) - tree >= set(INTERNAL_ERRORS)


def test_every_laneway_error_is_defined_in_core_errors() -> None:
    """A ``LanewayError`` subclass elsewhere would miss the tree, its pickling test and exports."""
    assert _error_classes_outside_core() == []


def test_every_class_of_core_types_is_public_or_named_internal() -> None:
    classes = {
        name
        for name, value in vars(core_types).items()
        if inspect.isclass(value) and value.__module__ == core_types.__name__
    }
    assert classes - set(INTERNAL_TYPES) <= set(laneway.__all__)
    assert set(INTERNAL_TYPES) <= classes


CALLS = ("chat", "chat_stream", "embed", "structured", "ocr", "batch", "embed_many")
"""The ``Laneway`` methods a caller calls: what they take and give back must be importable."""


def test_what_a_call_takes_and_gives_back_is_exported() -> None:
    """Each laneway class in a call's signature is in ``laneway`` or ``laneway.batch``."""
    exported = {
        id(getattr(module, name)) for module in (laneway, laneway.batch) for name in module.__all__
    }
    seen: set[type] = set()
    for method in CALLS:
        # the client names the batch types for type checkers only: resolve them from their home
        hints = typing.get_type_hints(getattr(laneway.Laneway, method), localns=vars(laneway.batch))
        for hint in hints.values():
            seen |= _laneway_classes(hint)
    assert seen
    assert sorted(c.__qualname__ for c in seen if id(c) not in exported) == []


def _laneway_classes(hint: object) -> set[type]:
    """The laneway classes named anywhere in a type hint (``list[X] | None``...)."""
    found = {hint} if isinstance(hint, type) and hint.__module__.startswith("laneway.") else set()
    parts = hint if isinstance(hint, list) else typing.get_args(hint)  # a Callable's [params]
    for arg in parts:
        found |= _laneway_classes(arg)
    origin = typing.get_origin(hint)
    if isinstance(origin, type) and origin.__module__.startswith("laneway."):
        found.add(origin)
    return found


def test_errors_work_after_a_plain_import_laneway() -> None:
    code = "import laneway; print(laneway.errors.DeadlineExceeded.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "DeadlineExceeded"


def test_a_plain_import_laneway_loads_neither_the_library_nor_the_errors() -> None:
    code = "import laneway, sys; print(*sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    heavy = {"laneway.client", "laneway.config.models", "laneway.errors", "pydantic", "aiohttp"}
    assert loaded & heavy == set()


def _error_classes_outside_core() -> list[str]:
    """``module:Class`` of each class under ``src/laneway`` deriving from a ``LanewayError``.

    Read from the source (no import), so optional extras need not be
    installed; bases are matched by name against the tree, to a fixed point.
    """
    error_names = {"LanewayError", *laneway.errors.__all__}
    classes = [
        (source.name, definition.name, definition.bases)
        for source in package_modules()
        for definition in source.classes
    ]
    outside: list[str] = []
    grown = True
    while grown:
        grown = False
        for module, name, bases in classes:
            where = f"{module}:{name}"
            if bases & error_names and module != core_errors.__name__ and where not in outside:
                outside.append(where)
                error_names.add(name)
                grown = True
    return sorted(outside)
