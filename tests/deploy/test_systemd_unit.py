"""docs/deploy.md's systemd unit keeps telemetry writable and restarts a crashed gateway."""

from __future__ import annotations

import configparser
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def unit() -> configparser.ConfigParser:
    text = DEPLOY.read_text(encoding="utf-8")
    start = text.index("# /etc/systemd/system/laneway.service")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text[start : text.index("```", start)])
    return parser


def test_the_unit_has_a_state_directory_restart_and_wants_what_it_is_after() -> None:
    parsed = unit()
    service = parsed["Service"]
    assert service["StateDirectory"] == "laneway" and service["WorkingDirectory"]
    assert service["Restart"] == "on-failure"
    assert service["RestartPreventExitStatus"] == "2", "a refusal to start is not retried"
    assert parsed["Unit"]["Wants"] == parsed["Unit"]["After"] == "network-online.target"


def test_the_documented_config_keeps_its_files_in_the_state_directory() -> None:
    text = DEPLOY.read_text(encoding="utf-8")
    assert "telemetry: {url: /var/lib/laneway/laneway.sqlite3, spool_dir: /var/lib/laneway}" in text
    assert "cache: {url: /var/lib/laneway/laneway-cache.sqlite3}" in text
