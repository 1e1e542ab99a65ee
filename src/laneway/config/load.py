"""Loading ``laneway.yaml``: YAML, a ``.env`` beside it, and readable errors."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values
from pydantic import ValidationError

from laneway.config.describe import describe, dotted, line_of
from laneway.config.environ import resolve_references
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError


def load_config(path: str | Path) -> tuple[LanewayConfig, dict[str, str]]:
    """Parse the file and return it with the environment its secrets resolve in.

    The environment is the process's, over the values of a ``.env`` file next to
    the config (the process wins, so a deploy can override a developer file).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    environ = environment_for(path)
    return parse_config(text, origin=str(path), environ=environ), environ


def environment_for(path: Path) -> dict[str, str]:
    """The process environment over the ``.env`` next to ``path``."""
    env_file = path.parent / ".env"
    values = {k: v for k, v in dotenv_values(env_file).items() if v is not None}
    values.update(os.environ)
    return values


def parse_config(
    text: str, origin: str = "<config>", environ: Mapping[str, str] | None = None
) -> LanewayConfig:
    """Validate YAML text; errors name each bad key and its line.

    Given ``environ``, every ``os.environ/NAME`` and ``${NAME}`` outside the
    secrets is resolved in it first (``laneway.config.environ``); one it does
    not set is an error naming its line and field.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_error(exc, origin)) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: the top level must be a mapping with a 'lanes' key")
    if environ is not None:
        data = _resolved(data, node, environ, origin)
    try:
        return LanewayConfig.model_validate(data)
    except ValidationError as exc:
        lines = [
            f"  {origin}:{line}: {text}" if line else f"  {origin}: {text}"
            for line, text in describe(exc.errors(), LanewayConfig, node, data)
        ]
        # Not chained: pydantic's own text quotes each bad value, and a key
        # pasted under a wrong name would reach every traceback that way.
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from None


def _resolved(
    data: dict[str, Any], node: yaml.Node | None, environ: Mapping[str, str], origin: str
) -> Any:
    missing: list[str] = []

    def unresolved(loc: tuple[Any, ...], reference: str) -> None:
        line = line_of(node, loc)
        place = f"{origin}:{line}" if line else origin
        name = reference.removeprefix("os.environ/").strip("${}")
        missing.append(f"  {place}: {dotted(loc)}: {reference}: {name} is not set or is empty")

    resolved = resolve_references(data, environ, unresolved)
    if missing:
        raise ConfigError("unresolved environment reference(s):\n" + "\n".join(missing))
    return resolved


def _yaml_error(exc: yaml.YAMLError, origin: str) -> str:
    """``file:line: not valid YAML: what`` (the line where the parser gave up)."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return f"{origin}: not valid YAML: {exc}"
    where = f"{origin}:{exc.problem_mark.line + 1}: not valid YAML: {exc.problem}"
    if exc.context is None or exc.context_mark is None:
        return where
    return f"{where} ({exc.context} that began on line {exc.context_mark.line + 1})"
