"""``laneway serve --demo``: the simulator in-process and lanes that show the policies.

The demo needs no keys and no network: its lanes (``demo.yaml`` beside this
module) point at a ``laneway sim`` started on a free loopback port, so curl
and the OpenAI SDK work against ``laneway serve --demo`` in the first minute.

The config is written, with the simulator's URL filled in, to a new private
folder under the system's temporary directory, and served from there like
any config file. Everything the demo keeps lands in that folder, never in
the working directory: telemetry (``laneway.sqlite3``) and the response
cache (``laneway-cache.sqlite3``). ``laneway spend --config
<folder>/laneway.yaml`` reads it while the demo runs; the folder is removed
when the demo stops, so a demo leaves nothing behind.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from laneway.engine.ocr import SAMPLE_PNG

DEMO_FILE = files("laneway.cli") / "demo.yaml"
CONFIG_NAME = "laneway.yaml"
PNG_1X1 = base64.b64encode(SAMPLE_PNG).decode()
"""A one-pixel PNG: the simulator reads any image, so the OCR example stays short."""


def write_demo_config(sim_url: str, folder: Path | None = None) -> Path:
    """Write the demo config, lanes pointed at ``sim_url``, into ``folder``; return its path.

    Without ``folder`` a new private one is made (``laneway-demo-*`` under the
    temporary directory).
    """
    where = Path(tempfile.mkdtemp(prefix="laneway-demo-")) if folder is None else folder
    path = where / CONFIG_NAME
    text = DEMO_FILE.read_text(encoding="utf-8").replace("{sim}", sim_url)
    path.write_text(text, encoding="utf-8")
    return path


def runners(environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """How to run ``python`` and ``laneway`` from the shell that started this demo.

    Under ``uv run`` (which sets ``UV``) the project's environment is not on
    the shell's PATH: ``uv run python``, ``uv run laneway``. When the
    ``laneway`` on PATH is this one: plain ``python`` and ``laneway``.
    Otherwise this interpreter by its path, and ``-m laneway``.
    """
    if "UV" in environ:
        return "uv run python", "uv run laneway"
    here = Path(sys.executable).parent
    found = shutil.which("laneway", path=environ.get("PATH"))
    if found is not None and Path(found).parent == here:
        return "python", "laneway"
    return sys.executable, f"{sys.executable} -m laneway"


def demo_examples(url: str, config: Path, environ: Mapping[str, str] = os.environ) -> str:
    """Commands to try against a demo gateway at ``url`` serving ``config``, runnable as printed."""
    python, laneway = runners(environ)
    hi = [{"role": "user", "content": "hi"}]
    sdk = (
        f'c = OpenAI(base_url="{url}/v1", api_key="demo"); '
        'print(c.chat.completions.create(model="demo-chat", '
        'messages=[{"role": "user", "content": "hi"}]).choices[0].message.content)'
    )
    document = {"type": "image_url", "image_url": f"data:image/png;base64,{PNG_1X1}"}
    chat = "/v1/chat/completions"
    return "\n".join(
        [
            "try:",
            _curl(url, chat, {"model": "demo-chat", "messages": hi}),
            _curl(url, chat, {"model": "demo-chat", "stream": True, "messages": hi}, "N"),
            _curl(url, chat, {"model": "demo-chat", "temperature": 0, "messages": hi}, "i")
            + "   # twice: X-Laneway-Cache: miss, then hit",
            _curl(url, chat, {"model": "demo-flaky", "messages": hi}, "i"),
            _curl(url, chat, {"model": "demo-slow", "messages": hi}, "i"),
            _curl(url, "/v1/embeddings", {"model": "demo-embed", "input": "hello"}),
            _curl(url, "/v1/ocr", {"model": "demo-ocr", "document": document}),
            f"  curl -s {url}/readyz",
            f"  curl -s {url}/metrics | grep laneway_requests",
            "  # with the OpenAI SDK (pip install openai):",
            f"  {python} -c 'from openai import OpenAI; {sdk}'",
            f"  {laneway} spend --config {config}   # telemetry is flushed every second",
        ]
    )


def _curl(url: str, path: str, body: dict[str, Any], flags: str = "") -> str:
    data = json.dumps(body, separators=(",", ":"))
    return f"  curl -s{flags} {url}{path} -H 'content-type: application/json' -d '{data}'"
