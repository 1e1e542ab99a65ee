"""``laneway serve --demo``: the simulator in-process and lanes that show the policies.

The demo needs no keys and no network: its lanes (``demo.yaml`` beside this
module) point at a ``laneway sim`` started on a free loopback port, so curl
and the OpenAI SDK work against ``laneway serve --demo`` in the first minute.
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from typing import Any

from laneway.config.load import parse_config
from laneway.config.models import LanewayConfig

DEMO_FILE = files("laneway.cli") / "demo.yaml"


def demo_config(sim_url: str) -> tuple[LanewayConfig, dict[str, str]]:
    """The demo lanes pointed at the simulator at ``sim_url``, with the process environment."""
    text = DEMO_FILE.read_text(encoding="utf-8").replace("{sim}", sim_url)
    return parse_config(text, origin=str(DEMO_FILE)), dict(os.environ)


def demo_examples(url: str) -> str:
    """Commands to try against a demo gateway at ``url``."""
    hi = [{"role": "user", "content": "hi"}]
    sdk = (
        f'c = OpenAI(base_url="{url}/v1", api_key="demo"); '
        'print(c.chat.completions.create(model="demo-chat", '
        'messages=[{"role": "user", "content": "hi"}]).choices[0].message.content)'
    )
    return "\n".join(
        [
            "try:",
            _curl(url, "/v1/chat/completions", {"model": "demo-chat", "messages": hi}),
            _curl(
                url,
                "/v1/chat/completions",
                {"model": "demo-chat", "stream": True, "messages": hi},
                "N",
            ),
            _curl(url, "/v1/chat/completions", {"model": "demo-flaky", "messages": hi}, "i"),
            _curl(url, "/v1/chat/completions", {"model": "demo-slow", "messages": hi}, "i"),
            _curl(url, "/v1/embeddings", {"model": "demo-embed", "input": "hello"}),
            f"  curl -s {url}/readyz",
            f"  python -c 'from openai import OpenAI; {sdk}'",
        ]
    )


def _curl(url: str, path: str, body: dict[str, Any], flags: str = "") -> str:
    data = json.dumps(body, separators=(",", ":"))
    return f"  curl -s{flags} {url}{path} -H 'content-type: application/json' -d '{data}'"
