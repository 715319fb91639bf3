"""The Content-Security-Policy of every portal answer (contract §7; core.csp says what it allows): pages,
redirects, the portal's 404 and 400 pages, a CSRF refusal, whatever made them. A page served with it runs
no inline script or style and posts forms only to Roster, so a value that slipped into a page unescaped
could not run, and no other site may frame the portal (`frame-ancestors 'none'`, beside Django's
X-Frame-Options: DENY). The portal's templates keep to it: CSS and JS live in static/portal/."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from core.csp import strict_policy
from core.surfaces import PORTAL, surface_of

POLICY = strict_policy(["'none'"])


class PortalHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if surface_of(request.path_info) == PORTAL:
            response["Content-Security-Policy"] = POLICY
        return response
