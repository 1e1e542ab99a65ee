"""The source distribution holds the project, not the caches its tools leave in the checkout."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHES = (".hypothesis", ".import_linter_cache", ".mypy_cache", ".pytest_cache", ".ruff_cache")


def test_the_sdist_ships_no_tool_caches(tmp_path: Path) -> None:
    for cache in (".hypothesis", ".import_linter_cache"):
        (ROOT / cache).mkdir(exist_ok=True)
    uv = shutil.which("uv")
    assert uv is not None
    subprocess.run(
        [uv, "build", "--sdist", "--offline", "-o", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        tops = {Path(name).parts[1] for name in archive.getnames() if len(Path(name).parts) > 1}
    assert "src" in tops and not tops & set(CACHES)
