"""deploy/: the compose file, its laneway.yaml and the Dockerfile agree with the CLI and each other.

No Docker daemon runs here, so the files are checked as data: the command the
compose file runs must parse as ``laneway serve`` arguments and be allowed to
bind, the config it mounts must load and name only variables the compose file
passes in, and the services the config points at must be the compose file's.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from laneway.app.checks import bind_refusal
from laneway.cli import serve
from laneway.config.load import parse_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def gateway() -> dict[str, Any]:
    service: dict[str, Any] = compose()["services"]["laneway"]
    return service


def mounted_config() -> Path:
    """The host file the compose file mounts where ``--config`` points."""
    args = serve.parser().parse_args(gateway()["command"][1:])
    volumes: list[str] = gateway()["volumes"]
    for volume in volumes:
        host, target, *_ = volume.split(":")
        if target == args.config:
            return (DEPLOY / host).resolve()
    raise AssertionError(f"nothing is mounted at {args.config}")


def referenced_variables(text: str) -> set[str]:
    return set(re.findall(r"os\.environ/([A-Za-z_][A-Za-z0-9_]*)", text))


def test_the_command_is_laneway_serve_and_may_bind_every_interface() -> None:
    command = gateway()["command"]
    assert command[0] == "serve"
    args = serve.parser().parse_args(command[1:])
    config = parse_config(mounted_config().read_text())
    assert config.server.keys, "a gateway on 0.0.0.0 needs server.keys"
    assert bind_refusal(args.host, keyed=True, insecure=args.insecure) is None
    assert f"{args.port}:{args.port}" in gateway()["ports"]


def test_every_variable_the_config_reads_is_passed_in() -> None:
    text = mounted_config().read_text()
    passed = set(gateway()["environment"])
    assert referenced_variables(text) <= passed
    assert "PGPASSWORD" in passed, "the telemetry URL carries no password; asyncpg reads it"


def test_the_config_points_at_the_compose_services() -> None:
    config = parse_config(mounted_config().read_text())
    services = set(compose()["services"])
    urls = [config.telemetry.url, config.state.url, config.cache.url]
    hosts = {urlsplit(url).hostname for url in urls if url}
    assert hosts == {"postgres", "redis"} <= services
    assert set(gateway()["depends_on"]) == {"postgres", "redis"}
    for name in ("postgres", "redis"):
        assert "healthcheck" in compose()["services"][name]


def test_the_image_installs_the_extras_the_config_needs() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(re.findall(r"--extra (\w+)", dockerfile))
    assert extras == {"redis", "postgres", "otel"} <= set(project["optional-dependencies"])
    assert 'ENTRYPOINT ["laneway"]' in dockerfile and "laneway" in project["scripts"]
    port = serve.parser().parse_args(gateway()["command"][1:]).port
    assert f"EXPOSE {port}" in dockerfile
    for copied in re.findall(r"^COPY (.+) \./?\S*$", dockerfile, flags=re.MULTILINE):
        for name in copied.split():
            assert (ROOT / name).exists(), f"the Dockerfile copies {name}, which is missing"
