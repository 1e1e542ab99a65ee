"""``Router``: a request's path and method to its endpoint, and ``OPTIONS`` answered.

Fixed paths are one dict lookup (``endpoints.route_table``); ``/v1/models/{id}``
(and ``/models/{id}``) is found by its prefix. A path no route has is a 404,
a method its route does not take a 405 with ``Allow`` (``HEAD`` rides on ``GET``).
"""

from __future__ import annotations

from laneway.server.asgi import Reply, Scope
from laneway.server.browsers import BrowserGuard
from laneway.server.context import Handler
from laneway.server.endpoints import Routes
from laneway.server.errors import Refused

_MODEL_PATHS = ("/v1/models/", "/models/")


class Router:
    """Finds the endpoint of a request among ``routes``; ``model`` answers a model by id."""

    __slots__ = ("_model", "routes")

    def __init__(self, routes: Routes, model: Handler) -> None:
        self.routes = routes
        self._model = model

    def lookup(self, path: str) -> tuple[str, Handler] | None:
        """The method and handler of ``path`` (``/v1/models/{id}`` by its prefix)."""
        route = self.routes.get(path)
        if route is None and path.startswith(_MODEL_PATHS):
            return ("GET", self._model)
        return route

    def handler(self, scope: Scope) -> Handler:
        """The endpoint of ``scope``'s request; ``Refused`` 404 or 405 when there is none."""
        path: str = scope["path"]
        route = self.lookup(path)
        if route is None:
            raise Refused(404, "not_found", f"no such endpoint: {path}")
        method, handler = route
        asked = scope["method"]
        if asked != method and not (asked == "HEAD" and method == "GET"):
            allow = [(b"allow", b"GET, HEAD" if method == "GET" else method.encode())]
            raise Refused(405, "method_not_allowed", f"{path} takes {method}", allow)
        return handler

    def options(self, scope: Scope, origin: bytes | None, browsers: BrowserGuard) -> Reply:
        """``OPTIONS``: a listed origin's CORS preflight, or the route's ``Allow``."""
        path: str = scope["path"]
        route = self.lookup(path)
        if route is None:
            raise Refused(404, "not_found", f"no such endpoint: {path}")
        methods = b"GET, HEAD, OPTIONS" if route[0] == "GET" else b"POST, OPTIONS"
        if origin is not None:
            return browsers.preflight(origin, methods)
        return Reply(204, b"", [(b"allow", methods)])
