"""Two checkouts of laneway under the same load, in alternating rounds: what a change costs.

    .venv/bin/python bench/checkout_ab.py BEFORE AFTER [--rounds 8] [--every-feature] [--no-write]

BEFORE and AFTER are checkouts (``git worktree add``), each with its own ``.venv``
(``uv sync``). Each runs ``laneway serve`` from its own environment with the same
config: one chat lane on a fixed nginx upstream, a plain lane (no key, metrics,
telemetry; ``--log-level warning``) or with ``--every-feature`` the gateway
benchmark's every feature on (a key with an ``rpm``, SQLite telemetry, metrics, the
access log). Servers on CPU 0 in turn, nginx and wrk on CPU 1; rounds alternate
(``_ab.alternate``), so a noisy spell lands on both. A change to the request path
that saves a few percent is below the noise of two separate runs, and visible here.
Written to ``docs/benchmarks.md`` (section ``checkout-ab``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _wrk
from _ab import Server, alternate, publish, section
from _procs import free_port, spawn
from gateway import wait_first_200
from nginx_upstream import start_nginx

COMMAND = ".venv/bin/python bench/checkout_ab.py"
SERVER_CPU, LOAD_CPU = 0, 1


def describe(checkout: Path) -> str:
    """The checkout's short commit, with ``+changes`` when its tree differs from it."""
    git = ["git", "-C", str(checkout)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    )
    return commit.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def start(stack: ExitStack, checkout: Path, config: Path, quiet: bool, scratch: Path) -> Server:
    """``laneway serve`` from ``checkout``'s environment, its bytecode compiled first."""
    python = checkout / ".venv" / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "compileall", "-q", str(checkout / "src" / "laneway")], check=True
    )
    port = free_port()
    serve = [str(checkout / ".venv" / "bin" / "laneway"), "serve", "--config", str(config)]
    serve += ["--host", "127.0.0.1", "--port", str(port)]
    cmd = ["env", "-C", str(scratch), *serve, *(["--log-level", "warning"] if quiet else [])]
    proc = spawn(checkout.name, cmd, cpu=SERVER_CPU)
    stack.callback(proc.stop)
    return proc, port


def lane_config(url: str, every_feature: bool, scratch: Path) -> dict[str, Any]:
    """The every-feature config, or the plain lane's."""
    if every_feature:
        return setup.every_feature_config(url, scratch / "telemetry.sqlite3")
    config = setup.laneway_config(url, {"url": "none"})
    config["server"] = {"host": "127.0.0.1", "metrics": False}
    return config


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, dict[str, float]]:
    """Each checkout's median req/s and CPU µs a request at c=32, and its p50 at c=1."""
    with ExitStack() as stack:
        nginx = start_nginx(free_port(), cpu=LOAD_CPU)
        stack.callback(nginx.proc.stop)
        config = setup.write_yaml(
            scratch / "laneway.yaml", lane_config(nginx.url, args.every_feature, scratch)
        )
        headers = setup.AUTH_HEADERS if args.every_feature else {}
        body = setup.request_body(setup.LANE)
        servers = {}
        for label, checkout in (("before", args.before), ("after", args.after)):
            proc, port = start(stack, checkout, config, not args.every_feature, scratch)
            wait_first_200(proc, port, body, 30.0, headers)
            servers[f"{label}: {describe(checkout)}"] = (proc, port)
        script = _wrk.write_script(scratch / "post.lua", body, headers)
        return alternate(servers, script, setup.PATH, args.rounds, LOAD_CPU)


def render(figures: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    """The section: a row per checkout, the second's ratios against the first."""
    lane = (
        "every feature on"
        if args.every_feature
        else "a plain lane (no key, metrics, telemetry, access log)"
    )
    command = f"{COMMAND} BEFORE AFTER --rounds {args.rounds}"
    command += " --every-feature" if args.every_feature else ""
    setting = (
        f"One chat lane on nginx, {lane}; {args.rounds} alternating rounds of 5 s at c=32 "
        "(medians), then 5 s at c=1. CPU is the server process's, every thread."
    )
    title = "Two checkouts, one load: what a change to the request path costs"
    return section(title, command, setting, figures, "checkout", "before")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="checkout measured first in each round")
    parser.add_argument("after", type=Path, help="checkout measured second in each round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument(
        "--every-feature", action="store_true", help="keyed rpm, telemetry, metrics, access log"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    for checkout in (args.before, args.after):
        if not (checkout / ".venv" / "bin" / "laneway").exists():
            parser.error(f"{checkout}: no .venv/bin/laneway (run `uv sync` there)")
    figures = measure(args, Path(tempfile.mkdtemp(prefix="checkout-ab-")))
    publish("checkout-ab", render(figures, args), write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
