"""An admin client for the tests: JSON calls to ``/admin`` with an admin key."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

ADMIN = {"Authorization": "Bearer adm-secret"}


async def admin(
    http: aiohttp.ClientSession,
    url: str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """``method path`` on the gateway at ``url``: the status and the decoded JSON."""
    data = None if body is None else orjson.dumps(body)
    sent = ADMIN if headers is None else headers
    async with http.request(method, f"{url}{path}", data=data, headers=sent) as response:
        return response.status, orjson.loads(await response.read())
