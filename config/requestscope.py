"""The outermost middleware of both of Django's chains: what every request owes the operator (contract §7.1).

- Its id (core.requestid): the client's own `X-Request-Id` when it is sane, else a new one; on the
  request (`request.request_id`, which config.errorpages uses), on every log line written while it runs
  (core.logfilters.RequestScopeFields), and in the `X-Request-Id` header of every answer, whatever the
  surface (portal pages and probes included).
- One log line (logger `roster.requests`, INFO) for every answer with a 4xx status: method, route
  pattern (never the path or its query: ids and filter values are personal data, and a setup link's path
  holds its token), status and time.
  A 5xx already has its line: Roster's error funnels log it (and mark it), and `django.request` logs
  every other one at ERROR, both carrying the request id.
- A count and a duration for /metrics by surface (core.surfaces) and route pattern (core.metrics).

A SCIM route that Django's handler serves (scim.http.wsgi falls back to it) is counted and logged by
the SCIM adapter (scim/http/views.py), like every SCIM request: this middleware only opens the scope
and leaves the rest to it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from core import metrics
from core.logfilters import ALREADY_LOGGED
from core.requestid import HEADER, scope_enter, scope_exit
from core.surfaces import surface_of

logger = logging.getLogger("roster.requests")


def route_of(request: HttpRequest) -> str:
    """The URL pattern the request matched (`api/v1/directory-sync/<str:directory_id>`), never its path."""
    match = getattr(request, "resolver_match", None)
    return match.route if match is not None and match.route else "unmatched"


class RequestScopeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        scope, token = scope_enter(request.META)
        request.request_id = scope.request_id  # type: ignore[attr-defined]
        try:
            response = self.get_response(request)
            if not response.has_header(HEADER):
                response[HEADER] = scope.request_id
            if not scope.observed:
                self._observe(request, response, time.perf_counter() - started)
            return response
        finally:
            scope_exit(token)

    def _observe(self, request: HttpRequest, response: HttpResponse, seconds: float) -> None:
        status = response.status_code
        route = route_of(request)
        metrics.http_request(
            surface=surface_of(request.path), route=route, method=request.method or "", status=status, seconds=seconds
        )
        if 400 <= status < 500 and not getattr(request, ALREADY_LOGGED, False):
            logger.info(
                "%s %s answered %d in %.1f ms",
                request.method,
                route,
                status,
                seconds * 1000,
                extra={"status": status, "route": route, "method": request.method},
            )
