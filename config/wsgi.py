"""WSGI entry point (`config.wsgi:application`, what granian serves: `python -m server.web`).

First Roster's limits on the request line and headers (config.requestlimits), then one Django
process, two handlers: requests under settings.SCIM_PATH_PREFIX, nearly all the traffic
an identity provider sends, go to scim.http.wsgi, which answers SCIM requests without Django's request
handler and hands anything else to a Django handler running settings.SCIM_MIDDLEWARE; every other
request runs through the full settings.MIDDLEWARE. Both Django handlers resolve against the same
URLconf. Kept for speed: bench/README.md, "Code kept for speed", "SCIM without Django's handler".

Under a server with several threads per worker (server.web sets GRANIAN_BLOCKING_THREADS), the handlers
run for one request at a time, and requests take turns by who sent them (core.turns: a SCIM directory,
else the credential, else the client's address); with one thread, or called directly (tests), they run
as they come.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import django
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

from core import turns

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class MiddlewareSubsetHandler(WSGIHandler):
    """A WSGIHandler whose middleware chain is `middleware` rather than settings.MIDDLEWARE."""

    def __init__(self, middleware: list[str]) -> None:
        self.middleware_paths = list(middleware)
        super().__init__()  # builds the chain through load_middleware()

    def load_middleware(self, is_async: bool = False) -> None:
        # Django builds the chain from settings.MIDDLEWARE; point it at the subset for the duration.
        # This runs once, when the module is imported (in server.web's launcher before it forks the
        # workers, single-threaded).
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = self.middleware_paths
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


class SurfaceApplication:
    """Refuses a request past Roster's limits (config.requestlimits), else sends it to the SCIM handler or
    the full one by the start of its path."""

    def __init__(self) -> None:
        from scim.http.wsgi import ScimApplication  # imports models: only once the apps are loaded
        from scim.routes import PREFIX

        self.prefix = settings.SCIM_PATH_PREFIX
        self.directory_at = len(PREFIX)  # where a SCIM path's directory id starts
        # Under a server with several threads per worker (server.web), requests take turns by sender
        # (core.turns); with one thread, or called directly, the application runs as requests come.
        threads = _threads(os.environ.get("GRANIAN_BLOCKING_THREADS"))
        self.turns = turns.Turns(self.handle, turns.hold_capacity(threads)) if threads > 1 else None
        self.full = WSGIHandler()
        self.scim = ScimApplication(fallback=MiddlewareSubsetHandler(settings.SCIM_MIDDLEWARE))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refused = refuse(environ, start_response)
        if refused is not None:
            return refused
        if self.turns is None:
            return self.handle(environ, start_response)
        path = environ.get("PATH_INFO", "")
        if path.startswith(self.prefix):
            # the directory: the segment after the SCIM base path (a path outside it keys on its own start)
            sender = "d" + path[self.directory_at :].partition("/")[0]
        else:
            sender = _sender(environ)
        return self.turns(sender, environ, start_response)

    def handle(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        handler = self.scim if environ.get("PATH_INFO", "").startswith(self.prefix) else self.full
        return handler(environ, start_response)


def _threads(value: str | None) -> int:
    try:
        return int(value or 1)
    except ValueError:
        return 1  # granian refuses it and says why


def _sender(environ: dict[str, Any]) -> str:
    """Who a request outside SCIM takes turns as: its credential (an API key, an admin token), else its
    client's address. Kept in memory for the wait only."""
    credential = environ.get("HTTP_AUTHORIZATION")
    return "k" + credential if credential else "a" + environ.get("REMOTE_ADDR", "")


django.setup(set_prefix=False)
from config.requestlimits import refuse  # noqa: E402 - answers through Django's settings: after setup

application = SurfaceApplication()
