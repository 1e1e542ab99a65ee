"""What ``bench/gateway.py`` runs: the request, the gateway configs and their commands.

Kept apart from the measuring loop so the loop reads as "start, load, read /proc, stop"
and every knob that makes the comparison fair (same upstream, same request, one worker,
no outside connections) sits in one place.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import litellm_env

REPO_ROOT = Path(__file__).resolve().parent.parent
LANEWAY_BIN = REPO_ROOT / ".venv" / "bin" / "laneway"
PATH = "/v1/chat/completions"
LANE = "bench-chat"
"""The lane (laneway) and ``model_name`` (LiteLLM) the load generator asks for."""
UPSTREAM_MODEL = "bench-model"
BENCH_KEY = "sk-bench-0123456789abcdef"
"""The bearer key every request carries (laneway checks it; the other rows ignore it)."""
AUTH_HEADERS = {"Authorization": f"Bearer {BENCH_KEY}"}
KEY_RPM = 100_000_000
"""The key's ``rpm``: checked on every call, never reached by a benchmark."""


def request_body(model: str) -> bytes:
    """A small non-streaming chat completion request naming ``model``."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 16,
    }
    return json.dumps(body, separators=(",", ":")).encode()


# ------------------------------------------------------------------------------ laneway


def laneway_config(upstream_url: str, telemetry: object | None) -> dict[str, Any]:
    """One chat lane with one OpenAI source on nginx, called with a key that has an ``rpm``.

    ``telemetry`` is the top-level key (``None`` leaves it out). Metrics are always
    on in ``laneway serve``, and so is its access log at the default ``--log-level``:
    with telemetry on this is the issue's "every feature on" configuration.
    """
    source = {"provider": "openai", "base_url": f"{upstream_url}/v1", "model": UPSTREAM_MODEL}
    key = {"name": "bench", "key": BENCH_KEY, "rpm": KEY_RPM}
    config: dict[str, Any] = {
        "lanes": {LANE: {"kind": "chat", "deadline": "30s", "sources": [source]}},
        "server": {"host": "127.0.0.1", "keys": [key]},
    }
    if telemetry is not None:
        config["telemetry"] = telemetry
    return config


def every_feature_config(upstream_url: str, telemetry_db: Path) -> dict[str, Any]:
    """``laneway_config`` with telemetry to a SQLite file: every feature of the issue on."""
    return laneway_config(upstream_url, {"url": f"sqlite:///{telemetry_db}"})


def feature_config(
    lanes: dict[str, dict[str, Any]],
    telemetry_db: Path,
    *,
    key_name: str = "bench",
    state_url: str | None = None,
) -> dict[str, Any]:
    """Every feature on over ``lanes``: the keyed ``rpm``, telemetry, (``state_url``: Redis)."""
    key = {"name": key_name, "key": BENCH_KEY, "rpm": KEY_RPM}
    config: dict[str, Any] = {
        "lanes": lanes,
        "server": {"host": "127.0.0.1", "keys": [key]},
        "telemetry": {"url": f"sqlite:///{telemetry_db}"},
    }
    if state_url is not None:
        config["state"] = {"url": state_url}
    return config


def openai_lane(base_url: str, **extra: Any) -> dict[str, Any]:
    """A lane of one OpenAI-shaped source at ``base_url`` (``extra``: lane settings)."""
    source = {"provider": "openai", "base_url": base_url, "model": UPSTREAM_MODEL}
    return {"kind": "chat", "deadline": "30s", "sources": [source], **extra}


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as YAML (what both gateways read) and return the path."""
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def laneway_cmd(config: Path, port: int, workdir: Path) -> list[str]:
    """``laneway serve`` with one worker, started in ``workdir`` so stray files land there."""
    serve = [str(LANEWAY_BIN), "serve", "--config", str(config)]
    return ["env", "-C", str(workdir), *serve, "--host", "127.0.0.1", "--port", str(port)]


def compile_laneway() -> None:
    """Write laneway's bytecode beside its source, as installing a wheel does.

    The checkout is an editable install; run under ``PYTHONDONTWRITEBYTECODE=1``
    (as on the bench machine) every ``laneway serve`` would compile all of
    laneway's modules again: ~0.12 s of CPU in its time to ready that no
    installed laneway pays. Call before the first server starts.
    """
    source = REPO_ROOT / "src" / "laneway"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source)], check=True)


def laneway_version() -> str:
    """Package version plus the git revision (``-dirty`` while the server is uncommitted)."""
    rev = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    import importlib.metadata

    return f"laneway {importlib.metadata.version('laneway')} ({rev or 'no git'})"


@dataclass(frozen=True)
class Telemetry:
    """How telemetry was switched for the laneway rows, decided from the live schema."""

    on: object | None
    off: object | None
    note: str

    @property
    def split(self) -> bool:
        """True when on and off can be measured as separate rows."""
        return self.on is not None and self.off is not None


_ON_SHAPES = ("{url: sqlite:///DB}", "{url: DB}", "{path: DB}", "DB")
_OFF_SHAPES = ("{url: none}", "{url: null}", "{enabled: false}", "false")


def _shape(template: str, db: Path) -> object:
    """Turn a YAML template (``DB`` = the sqlite path) into the value to put in the config."""
    return yaml.safe_load(template.replace("DB", str(db)))


def _valid(value: object) -> bool:
    """True when the current ``LanewayConfig`` accepts ``telemetry: value``."""
    from pydantic import ValidationError

    from laneway.config.models import LanewayConfig

    try:
        LanewayConfig.model_validate(laneway_config("http://127.0.0.1:9", value))
    except ValidationError:
        return False
    return True


def detect_telemetry(db: Path) -> Telemetry:
    """Find the ``telemetry:`` forms the schema accepts *at run time* (it is being added).

    The key's exact shape was not settled when this was written, so the first accepted
    form from a short list is used and the note records which, for the reader to check.
    """
    try:
        from laneway.config.models import LanewayConfig
    except ImportError as exc:
        return Telemetry(None, None, f"laneway.config.models did not import ({exc})")
    if "telemetry" not in LanewayConfig.model_fields:
        return Telemetry(None, None, "no `telemetry:` key in LanewayConfig at run time")
    on = next((t for t in _ON_SHAPES if _valid(_shape(t, db))), None)
    off = next((t for t in _OFF_SHAPES if _valid(_shape(t, db))), None)
    note = f"telemetry on: `telemetry: {on}`; off: `telemetry: {off}` (DB = a fresh temp file)"
    return Telemetry(
        None if on is None else _shape(on, db), None if off is None else _shape(off, db), note
    )


def db_size(db: Path) -> int:
    """Bytes in the telemetry database and its WAL, 0 when absent: proof telemetry wrote."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += (db.parent / (db.name + suffix)).stat().st_size
    return total


# ------------------------------------------------------------------------------ litellm


def litellm_config(upstream_url: str) -> dict[str, Any]:
    """One ``model_list`` entry pointing at nginx; no database, no master key."""
    params = {
        "model": f"openai/{UPSTREAM_MODEL}",
        "api_base": f"{upstream_url}/v1",
        "api_key": "sk-bench-dummy",
    }
    return {"model_list": [{"model_name": LANE, "litellm_params": params}]}


def litellm_cmd(config: Path, port: int, workdir: Path) -> list[str]:
    """The proxy CLI as documented: one uvicorn worker, usage telemetry off."""
    cli = str(litellm_env.litellm_cli())
    args = ["--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    args += ["--num_workers", "1", *litellm_env.PROXY_OFFLINE_ARGS]
    return ["env", "-C", str(workdir), cli, *args]


def litellm_env_vars() -> dict[str, str]:
    """Offline environment, with any database URL removed so the proxy runs without one."""
    env = litellm_env.offline_env()
    for name in ("DATABASE_URL", "LITELLM_MASTER_KEY", "STORE_MODEL_IN_DB"):
        env.pop(name, None)
    return env


def litellm_version() -> str:
    """Installed LiteLLM version from its own venv."""
    code = "import importlib.metadata as m; print(m.version('litellm'))"
    out = subprocess.run(
        [str(litellm_env.python_path()), "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=litellm_env.offline_env(),
    )
    return f"litellm {out.stdout.strip()}"


def nginx_version() -> str:
    """``nginx/1.22.1`` (nginx prints its version on stderr)."""
    out = subprocess.run(["nginx", "-v"], capture_output=True, text=True, check=False)
    return (out.stderr or out.stdout).strip().removeprefix("nginx version: ") or "nginx"


def cpu_count() -> int:
    """CPUs this process may run on (the placement below needs two)."""
    return len(os.sched_getaffinity(0))
