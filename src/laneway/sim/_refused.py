"""The sim's field checks raise `Refused` at the first problem; `first_problem` reports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Refused(Exception):
    """The first problem found in a request; its message is the 400's."""


def first_problem(check: Callable[[dict[str, Any]], None], body: dict[str, Any]) -> str | None:
    """What `check` refuses in `body`, or None when it passes."""
    try:
        check(body)
    except Refused as exc:
        return str(exc)
    return None
