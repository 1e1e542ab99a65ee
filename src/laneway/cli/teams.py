"""``laneway teams create|list|delete``: the key store's teams (``laneway.cli.stored_keys``)."""

from __future__ import annotations

from collections.abc import Sequence

from laneway.cli.stored_keys import main as stored_main


def main(argv: Sequence[str]) -> int:
    """Run one team command."""
    return stored_main(argv, "teams")
