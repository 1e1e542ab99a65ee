"""Install and verify the Portkey gateway (Node) that ``bench/gateway.py`` runs beside laneway.

``@portkey-ai/gateway`` is the npm package of github.com/Portkey-AI/gateway (MIT), the
open-source Portkey AI gateway. It is installed with npm, pinned, into
``bench/.portkey`` (never the project), without running any package's install
scripts; a changed pin reinstalls. ``ensure`` checks the installed ``package.json``
names that repository and the pinned version before anything runs it.

The gateway routes a request by its headers: ``x-portkey-provider: openai`` and
``x-portkey-custom-host`` send it to the same nginx upstream the other rows use,
on loopback (``HEADERS``).

Run directly to install (idempotent) and verify:  ``.venv/bin/python bench/portkey_env.py``
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PREFIX = BENCH_DIR / ".portkey"
PACKAGE = "@portkey-ai/gateway"
VERSION = "1.15.2"
REPOSITORY = "github.com/Portkey-AI/gateway"
_PACKAGE_DIR = PREFIX / "node_modules" / "@portkey-ai" / "gateway"
_STAMP = PREFIX / ".bench-requirements"


def headers(upstream_url: str) -> dict[str, str]:
    """What routes a request through Portkey to ``upstream_url``'s OpenAI-shaped API."""
    return {"x-portkey-provider": "openai", "x-portkey-custom-host": f"{upstream_url}/v1"}


def command(port: int) -> list[str]:
    """The server as its package starts it (``bin``), on ``port``, without its web console."""
    node = shutil.which("node") or "node"
    return [node, str(_PACKAGE_DIR / "build" / "start-server.js"), f"--port={port}", "--headless"]


def _run(cmd: list[str], timeout: float) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc.stdout


def _install() -> None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise RuntimeError("the Portkey gateway needs node and npm on PATH")
    PREFIX.mkdir(exist_ok=True)
    _run(
        [
            "npm",
            "install",
            "--prefix",
            str(PREFIX),
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            f"{PACKAGE}@{VERSION}",
        ],
        timeout=600,
    )
    _STAMP.write_text(f"{PACKAGE}@{VERSION}\n", encoding="utf-8")


def verify() -> str:
    """Check the installed package is the pinned release of Portkey's repository; its version."""
    meta = json.loads((_PACKAGE_DIR / "package.json").read_text(encoding="utf-8"))
    repository = meta.get("repository")
    url = repository.get("url", "") if isinstance(repository, dict) else str(repository)
    if meta.get("name") != PACKAGE or meta.get("version") != VERSION or REPOSITORY not in url:
        raise RuntimeError(
            f"{_PACKAGE_DIR} is {meta.get('name')} {meta.get('version')} from {url!r}, "
            f"not {PACKAGE} {VERSION} from {REPOSITORY}"
        )
    if not (_PACKAGE_DIR / "build" / "start-server.js").exists():
        raise RuntimeError(f"{PACKAGE} {VERSION} has no build/start-server.js")
    return str(meta["version"])


def _is_current() -> bool:
    return _STAMP.exists() and _STAMP.read_text(encoding="utf-8") == f"{PACKAGE}@{VERSION}\n"


def ensure() -> str:
    """Install the pinned gateway if missing or stale, verify it; its version line."""
    if not _is_current():
        _install()
    version = verify()
    node = _run([shutil.which("node") or "node", "--version"], timeout=30).strip()
    return f"Portkey gateway {version} (node {node})"


def main() -> int:
    """CLI entry point: install/verify and report the elapsed time."""
    started = time.monotonic()
    line = ensure()
    print(f"{line} at {PREFIX} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
