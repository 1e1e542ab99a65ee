"""Web pages may not drive the gateway: foreign ``Origin``s and rebound ``Host``s are refused.

A keyless gateway on loopback trusts whoever can reach the port, and a web
page the operator visits can reach it: a ``text/plain`` POST needs no CORS
preflight (cross-site request forgery), and a domain re-pointed at 127.0.0.1
makes the browser treat the gateway as that domain's own server, answers
readable (DNS rebinding). Browsers always send ``Origin`` on such requests
and always send the page's domain as ``Host``, so: a request with an
``Origin`` not listed in ``server.cors.origins`` is refused (403), keys or
not; and a keyless gateway answers only ``Host`` names that cannot be
rebound: IP literals, ``localhost`` (and ``*.localhost``), ``server.host``
and ``server.allowed_hosts``.

A page whose origin is listed gets CORS: a preflight (``OPTIONS`` with
``Access-Control-Request-Method``) is answered 204 with what it may send, and
every answer to it carries ``Access-Control-Allow-Origin`` and exposes
laneway's headers, so browser clients read the lane, source and cache outcome.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from laneway.config.models import ServerConfig
from laneway.server.asgi import Message, Reply, Send
from laneway.server.errors import Refused

_KNOWN_HOSTS_KEPT = 256
"""Approved ``Host`` values remembered, so a request costs one set lookup."""
ALLOWED_REQUEST_HEADERS = (
    b"authorization, content-type, x-api-key, x-request-id, cache-control, "
    b"x-laneway-deadline-ms, x-stainless-timeout, x-stainless-read-timeout, "
    b"anthropic-version, openai-organization, openai-project"
)
"""What a page may send: keys, the body's type, and the headers laneway reads."""
EXPOSED_HEADERS = (
    b"x-laneway-lane, x-laneway-source, x-laneway-attempts, x-laneway-cache, "
    b"x-laneway-usage, x-request-id, retry-after"
)
PREFLIGHT_MAX_AGE = b"600"


class BrowserGuard:
    """Checks each request's ``Origin`` and (keyless gateways only) its ``Host``."""

    def __init__(self, server: ServerConfig, *, open_gateway: bool) -> None:
        origins = server.cors.origins if server.cors is not None else []
        self.origins = frozenset(origin.rstrip("/").encode() for origin in origins)
        self.check_host = open_gateway
        self.names = frozenset(
            name.lower() for name in ("localhost", server.host, *server.allowed_hosts)
        )
        self._approved: set[bytes] = set()

    def check(self, headers: Mapping[bytes, bytes]) -> None:
        """Raise ``Refused`` (403) for a foreign ``Origin`` or a keyless rebound ``Host``."""
        origin = headers.get(b"origin")
        if origin is not None and origin not in self.origins:
            raise Refused(
                403,
                "origin_not_allowed",
                f"requests from web pages (Origin {origin.decode('latin-1')!r}) are refused; "
                "list the page's origin in server.cors.origins to allow it",
            )
        host = headers.get(b"host")
        if not self.check_host or host is None or host in self._approved:
            return
        if not self.host_allowed(host.decode("latin-1")):
            raise Refused(
                403,
                "host_not_allowed",
                f"Host {host.decode('latin-1')!r} is not this gateway's address; a gateway "
                "without server.keys answers IP addresses, localhost and server.allowed_hosts",
            )
        if len(self._approved) < _KNOWN_HOSTS_KEPT:
            self._approved.add(host)

    def preflight(self, origin: bytes, methods: bytes) -> Reply:
        """The 204 answer to a listed origin's preflight for a route taking ``methods``."""
        headers = [
            (b"access-control-allow-origin", origin),
            (b"access-control-allow-methods", methods),
            (b"access-control-allow-headers", ALLOWED_REQUEST_HEADERS),
            (b"access-control-max-age", PREFLIGHT_MAX_AGE),
            (b"vary", b"Origin"),
        ]
        return Reply(204, b"", headers)

    def with_cors(self, send: Send, origin: bytes) -> Send:
        """``send`` with the CORS headers added to the answer's head (``origin`` is listed)."""
        extra = [
            (b"access-control-allow-origin", origin),
            (b"access-control-expose-headers", EXPOSED_HEADERS),
            (b"vary", b"Origin"),
        ]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], *extra]}
            await send(message)

        return sending

    def host_allowed(self, host: str) -> bool:
        """True when ``host`` (a ``Host`` header, port and all) names no rebindable domain."""
        name = host_name(host).lower()
        if name in self.names or name.endswith(".localhost"):
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


def host_name(host: str) -> str:
    """The name of a ``Host`` header without its port (``[::1]:4000`` gives ``::1``)."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") > 1:  # a bare IPv6 address (no port can be told apart)
        return host
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() else host
