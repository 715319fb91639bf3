"""404/500 answers in the format of the surface a path belongs to (config/urls.py handler404/500).

A client of the REST or admin API parses `{data, error}`, an identity provider parses an RFC 7644
§3.12 error; neither can do anything with Django's HTML page. Browser paths keep Django's pages.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from directories.envelope import fail_json

_ENVELOPE_PREFIXES = ("/api/v1/", "/auditlog/")
_SCIM_PREFIX = "/api/scim/"
SCIM_ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


def _surface(path: str) -> str:
    if path.startswith(_SCIM_PREFIX) or path == _SCIM_PREFIX.rstrip("/"):
        return "scim"
    if path.startswith(_ENVELOPE_PREFIXES) or path in ("/api/v1", "/auditlog"):
        return "envelope"
    return "html"


def scim_error(status: int, detail: str) -> JsonResponse:
    # RFC 7644 §3.12: status is a string; Entra wants application/scim+json even on errors (INTEROP E11).
    return JsonResponse(
        {"schemas": [SCIM_ERROR_SCHEMA], "status": str(status), "detail": detail},
        status=status,
        content_type="application/scim+json",
    )


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    surface = _surface(request.path)
    if surface == "scim":
        return scim_error(404, "Resource not found.")
    if surface == "envelope":
        return fail_json("Not found.", 404)
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    surface = _surface(request.path)
    if surface == "scim":
        return scim_error(500, "Internal server error.")
    if surface == "envelope":
        return fail_json("Internal server error.", 500)
    return defaults.server_error(request)


def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Catch-all for unknown paths under the API prefixes. With DEBUG on, Django answers an unmatched
    path with its HTML technical page instead of calling handler404, so the dev server needs a route."""
    return handler404(request)
