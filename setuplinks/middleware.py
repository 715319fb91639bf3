"""The headers of every answer under /setup/ (setuplinks.headers says which and why).

Placed right inside config.requestscope's middleware, so it sees every answer to a setup path whatever
made it: the page's views, their 404/410/429, a CSRF refusal, a 405, Django's 500 page. Django's
clickjacking middleware, further in, has set `X-Frame-Options: DENY` by then; it is removed here, because
the page's CSP `frame-ancestors` is what decides who may embed it (SETUP_FRAME_ANCESTORS).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from setuplinks.headers import is_setup_path, setup_headers


class SetupHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if is_setup_path(request.path_info):
            for name, value in setup_headers(settings.SETUP_FRAME_ANCESTORS).items():
                response[name] = value
            if response.has_header("X-Frame-Options"):
                del response["X-Frame-Options"]
        return response
