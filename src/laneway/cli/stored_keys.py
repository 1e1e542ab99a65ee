"""``laneway keys create|list|revoke|rotate`` and ``laneway teams create|list|delete``.

Against a running gateway's admin API (``--admin-url``, the admin key read from
the variable ``--admin-key-env``, default ``LANEWAY_ADMIN_KEY``: never from the
command line), or against the key store of ``--config`` directly, through the
same API code in this process (audited as ``cli:<user>``). A created or
rotated key's secret is printed once, on its own line.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from laneway.config.load import load_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError

KEY_COMMANDS = ("create", "list", "revoke", "rotate")
TEAM_COMMANDS = ("create", "list", "delete")
Answer = tuple[int, Any]


def main(argv: Sequence[str], noun: str = "keys") -> int:
    """Run one key or team command; non-zero on a refused request or an unreadable config."""
    ns = _parser(noun).parse_args(argv)
    method, path, body = _request(noun, ns)
    try:
        status, answer = asyncio.run(_send(ns, method, path, body))
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if status >= 400:
        error = answer.get("error", {}) if isinstance(answer, dict) else {}
        print(f"error ({status}): {error.get('message', answer)}", file=sys.stderr)
        return 1
    print(_render(ns.command, answer))
    return 0


def _parser(noun: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"laneway {noun}", description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="laneway.yaml", help="the config whose store to use")
    parser.add_argument("--admin-url", help="a gateway's URL: use its admin API instead")
    parser.add_argument("--admin-key-env", default="LANEWAY_ADMIN_KEY")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create")
    create.add_argument("name")
    _limit_options(create)
    if noun == "keys":
        create.add_argument("--team")
        create.add_argument("--expires-in", help="e.g. 30d")
        sub.add_parser("revoke").add_argument("id")
        rotate = sub.add_parser("rotate")
        rotate.add_argument("id")
        rotate.add_argument("--grace", default="0s", help="how long the old secret works")
    else:
        sub.add_parser("delete").add_argument("name")
    sub.add_parser("list")
    return parser


def _limit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lanes", help="comma-separated lanes (default: all)")
    for name in ("rpm", "tpm", "max-concurrency"):
        parser.add_argument(f"--{name}", type=int)
    parser.add_argument(
        "--budget", help="AMOUNT/PERIOD (day, week, month or total), e.g. 20/day, 500/total"
    )


def _request(noun: str, ns: argparse.Namespace) -> tuple[str, str, dict[str, Any] | None]:
    base = f"/admin/{noun}"
    if ns.command == "list":
        return "GET", base, None
    if ns.command == "create":
        return "POST", base, _create_body(ns)
    if ns.command == "rotate":
        return "POST", f"{base}/{ns.id}/rotate", {"grace": ns.grace}
    return "DELETE", f"{base}/{getattr(ns, 'id', None) or ns.name}", None


def _create_body(ns: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"name": ns.name}
    if ns.lanes:
        body["lanes"] = [lane.strip() for lane in ns.lanes.split(",") if lane.strip()]
    for name in ("rpm", "tpm", "max_concurrency"):
        if getattr(ns, name) is not None:
            body[name] = getattr(ns, name)
    if ns.budget:
        amount, _, period = ns.budget.partition("/")
        body["budget"] = {"amount": _number(amount), "period": period or "month"}
    for name in ("team", "expires_in"):
        if getattr(ns, name, None):
            body[name] = getattr(ns, name)
    return body


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text  # the API names the field it cannot read


async def _send(
    ns: argparse.Namespace, method: str, path: str, body: dict[str, Any] | None
) -> Answer:
    if ns.admin_url:
        return await _over_http(ns, method, path, body)
    return await _in_process(Path(ns.config), method, path, body)


async def _over_http(
    ns: argparse.Namespace, method: str, path: str, body: dict[str, Any] | None
) -> Answer:
    import aiohttp

    key = os.environ.get(ns.admin_key_env)
    if not key:
        raise ConfigError(f"set {ns.admin_key_env} to an admin key (server.admin_keys)")
    headers = {"authorization": f"Bearer {key}"}
    data = None if body is None else orjson.dumps(body)
    url = ns.admin_url.rstrip("/") + path
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, data=data, headers=headers) as answer,
    ):
        return answer.status, orjson.loads(await answer.read())


class _LocalAdmin:
    """The CLI's own credentials: the person at the terminal, with the store's file access."""

    def __init__(self) -> None:
        self.name = f"cli:{getpass.getuser()}"

    def admin(self, headers: Mapping[bytes, bytes], peer: str, route: str) -> str:
        return self.name


async def _in_process(
    config_path: Path, method: str, path: str, body: dict[str, Any] | None
) -> Answer:
    config, _ = load_config(config_path)
    return await _answered(config, config_path.parent, method, path, body)


async def _answered(
    config: LanewayConfig, base_dir: Path, method: str, path: str, body: dict[str, Any] | None
) -> Answer:
    from laneway.server.admin import AdminApi, AdminRequest
    from laneway.server.stored_keys import StoredKeys
    from laneway.state.keys.databases import DEFAULT_PATH, open_key_store
    from laneway.telemetry.factory import store_for_url

    store = open_key_store(config.server.key_store or DEFAULT_PATH, base_dir)
    notices = None
    if config.state.url is not None:  # Redis: the serving replicas hear the change at once
        from laneway.state.keys.notices import RedisKeyNotices

        notices = RedisKeyNotices.from_url(config.state.url, timeout=config.state.timeout)
    stored = StoredKeys(store, list(config.lanes), config.aliases, notices=notices)
    telemetry = store_for_url(config.telemetry.url, base_dir)
    spend = None
    if telemetry is not None:
        from laneway.server.admin_query import TelemetrySpend

        spend = TelemetrySpend(telemetry)
    api = AdminApi(_LocalAdmin(), stored, [k.name for k in config.server.keys], spend)
    try:
        await stored.refresh()
        reply = await api.answer(AdminRequest(method, path, b"", {}, body, "cli"))
    finally:
        await api.aclose()
        await stored.aclose()
    return reply.status, orjson.loads(reply.body)


def _render(command: str, answer: Any) -> str:
    if command == "list":
        return _table(answer)
    lines = [_summary(answer)]
    if isinstance(answer, dict) and "key" in answer:
        lines += ["the key's secret (shown this once):", answer["key"]]
    return "\n".join(lines)


def _summary(row: Mapping[str, Any]) -> str:
    if row.get("deleted"):
        return f"deleted {row.get('id') or row.get('name')}"
    return " ".join(f"{k}={v}" for k, v in row.items() if k != "key" and v not in (None, {}, []))


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "(none)"
    columns = [c for c in ("id", "name", "prefix", "team", "lanes", "rpm", "tpm") if c in rows[0]]
    extra = ("budget", "expires_at", "blocked", "spend_usd", "last_used_at")
    columns += [c for c in extra if c in rows[0]]
    table = [columns] + [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, dict) and "amount" in value:
        return f"${value['amount']:g}/{value['period']}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
