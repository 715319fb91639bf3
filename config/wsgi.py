"""WSGI entry point (`config.wsgi:application`, what granian serves: `python -m server.web`).

First Roster's limits on the request line and headers (config.requestlimits), then one Django
process, two handlers: requests under settings.SCIM_PATH_PREFIX, nearly all the traffic
an identity provider sends, go to scim.http.wsgi, which answers SCIM requests without Django's request
handler and hands anything else to a Django handler running settings.SCIM_MIDDLEWARE; every other
request runs through the full settings.MIDDLEWARE. Both Django handlers resolve against the same
URLconf. Kept for speed: bench/README.md, "Code kept for speed", "SCIM without Django's handler".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import django
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

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

        self.prefix = settings.SCIM_PATH_PREFIX
        self.full = WSGIHandler()
        self.scim = ScimApplication(fallback=MiddlewareSubsetHandler(settings.SCIM_MIDDLEWARE))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refused = refuse(environ, start_response)
        if refused is not None:
            return refused
        handler = self.scim if environ.get("PATH_INFO", "").startswith(self.prefix) else self.full
        return handler(environ, start_response)


django.setup(set_prefix=False)
from config.requestlimits import refuse  # noqa: E402 - answers through Django's settings: after setup

application = SurfaceApplication()
