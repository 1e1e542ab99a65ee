"""The catalogue's answers kept on disk, so a restart does not search it again.

Searching genai-prices means forking, importing it and loading its data set:
~0.1 s of CPU, and 0.5 s of waiting for the child on a busy 2-core machine,
the longest single step of ``laneway serve``'s time to ready. Its answers
depend only on the installed genai-prices and laneway and on the
``(model, base_url)`` asked, so they are kept in a file named after both
versions; a source not in it is searched (and added) as before. The file
lives in the user's cache folder (``$LANEWAY_CACHE_DIR``, else
``$XDG_CACHE_HOME/laneway``, else ``~/.cache/laneway``) and is read only when
this user owns it and nobody else may write it, since it is a pickle. Any
failure to read or write it only means searching again.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import pickle
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo

CACHE_DIR_ENV = "LANEWAY_CACHE_DIR"
FORMAT = 1
"""Bumped when what a cached answer means changes (the search order, the stored shape)."""

Wanted = tuple[str, str]
"""``(model, base_url)`` of a source."""
Found = tuple["ModelInfo", str] | None
"""The catalogue model and where it came from (``genai-prices provider/model``); ``None``: none."""


def cache_file() -> Path | None:
    """This installation's cache file; ``None`` when a version or the home folder is unknown."""
    try:
        ours, prices = _installed_versions()
        folder = cache_dir()
    except (importlib.metadata.PackageNotFoundError, RuntimeError):  # RuntimeError: no home
        return None
    return folder / f"prices-{FORMAT}-laneway-{ours}-genai-prices-{prices}.pickle"


@functools.cache
def _installed_versions() -> tuple[str, str]:
    """The installed laneway and genai-prices versions, read once per process.

    Each read parses a package's metadata file (2-6 ms), and every engine
    built (each ``Laneway``, each reload) asks for the cache file.
    """
    return importlib.metadata.version("laneway"), importlib.metadata.version("genai-prices")


def cache_dir() -> Path:
    """``$LANEWAY_CACHE_DIR``, else ``$XDG_CACHE_HOME/laneway``, else ``~/.cache/laneway``."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "laneway"


def load(path: Path) -> dict[Wanted, Found]:
    """The answers stored in ``path``; empty when it is missing, unsafe or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return {}
        try:
            stored = pickle.load(file)
        except Exception:  # a truncated or foreign file: search again
            return {}
    return stored if isinstance(stored, dict) else {}


def store(path: Path, answers: Mapping[Wanted, Found]) -> None:
    """Replace ``path`` with ``answers`` (written aside, then renamed); failures are ignored."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, aside = tempfile.mkstemp(prefix=".prices-", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as file:
            pickle.dump(dict(answers), file)
        os.replace(aside, path)
    except (OSError, pickle.PicklingError):
        Path(aside).unlink(missing_ok=True)
