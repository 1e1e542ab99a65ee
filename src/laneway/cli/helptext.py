"""A command's ``--help`` description from its module docstring, without reST markup."""

from __future__ import annotations


def summary(doc: str | None) -> str:
    """The first paragraph of ``doc`` on one line, its double backticks dropped."""
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split()).replace("``", "")
