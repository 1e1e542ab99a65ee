"""Create and verify the isolated virtualenv that runs the LiteLLM proxy for comparisons.

LiteLLM pins and drags in a large dependency tree (fastapi, pydantic, openai, ...) that
would conflict with laneway's own lockfile, so it lives in ``bench/.venv-litellm`` and
is never installed into the project venv. Other benchmarks call :func:`ensure` and
then run :func:`python_path` / :func:`litellm_cli` as subprocesses.

Run directly to build (idempotent) and verify:  ``.venv/bin/python bench/litellm_env.py``
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
VENV_DIR = BENCH_DIR / ".venv-litellm"
REQUIREMENTS = ("litellm[proxy]==1.96.2", "fastapi<=0.140.6")
# Records what was installed; a changed pin forces a reinstall instead of a silent mismatch.
_STAMP = VENV_DIR / ".bench-requirements"
_CHECK_TIMEOUT_S = 180
# LiteLLM fetches its cost map, beta-header config, policy templates and blog posts from
# GitHub at import/startup unless told not to; the sandbox allows loopback traffic only.
_OFFLINE_VARS = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True",
}
# Pass to `litellm` (the proxy CLI) so it does not report usage to its vendor.
PROXY_OFFLINE_ARGS = ("--telemetry", "False")


def python_path() -> Path:
    """Interpreter of the LiteLLM venv (may not exist until :func:`ensure` ran)."""
    return VENV_DIR / "bin" / "python"


def litellm_cli() -> Path:
    """The ``litellm`` proxy console script inside the venv."""
    return VENV_DIR / "bin" / "litellm"


def offline_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for any LiteLLM subprocess: stops its remote fetches (loopback only here)."""
    env = dict(os.environ if base is None else base)
    env.update(_OFFLINE_VARS)
    return env


def _base_python() -> str:
    """Same CPython as the project venv, so comparisons are not skewed by interpreter version."""
    major, minor = sys.version_info[:2]
    return str(Path(sys.base_prefix) / "bin" / f"python{major}.{minor}")


def _stamp_text() -> str:
    return "\n".join(REQUIREMENTS) + "\n"


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a command, surfacing its output on failure so a broken install is diagnosable."""
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, check=False, env=offline_env()
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _create() -> None:
    """(Re)create the venv and install the pinned LiteLLM proxy into it with uv."""
    _run(["uv", "venv", "--clear", "--python", _base_python(), str(VENV_DIR)], timeout=120)
    _run(
        ["uv", "pip", "install", "--python", str(python_path()), *REQUIREMENTS],
        timeout=1800,
    )
    _STAMP.write_text(_stamp_text(), encoding="utf-8")


def verify() -> str:
    """Check the library imports and the proxy CLI starts; returns the installed version.

    ``litellm --help`` is checked separately because the proxy extra's imports (fastapi,
    uvicorn, ...) only load in the CLI, so a working ``import litellm`` alone proves little.
    """
    code = "import importlib.metadata as m, litellm; print(m.version('litellm'))"
    version = _run([str(python_path()), "-c", code], _CHECK_TIMEOUT_S).stdout.strip()
    help_text = _run([str(litellm_cli()), "--help"], _CHECK_TIMEOUT_S).stdout
    if "--port" not in help_text:
        raise RuntimeError(f"unexpected `litellm --help` output:\n{help_text[:2000]}")
    return version


def _is_current() -> bool:
    """True when the venv exists with exactly the pinned requirements installed."""
    if not (python_path().exists() and _STAMP.exists()):
        return False
    return _STAMP.read_text(encoding="utf-8") == _stamp_text()


def ensure() -> Path:
    """Build the venv if missing or stale, verify it, and return its interpreter path."""
    _ensure_version()
    return python_path()


def _ensure_version() -> str:
    if not _is_current():
        _create()
    return verify()


def main() -> int:
    """CLI entry point: build/verify and report the elapsed time."""
    started = time.monotonic()
    fresh = not _is_current()
    version = _ensure_version()
    elapsed = time.monotonic() - started
    action = "created" if fresh else "already present"
    print(f"litellm {version} venv {action} at {VENV_DIR} ({elapsed:.1f} s)")
    print(f"python: {python_path()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
