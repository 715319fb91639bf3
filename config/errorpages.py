"""Error answers in the format of the surface a path belongs to, and the one funnel for the unexpected.

A client of the REST or admin API parses `{data, error}`, an identity provider parses an RFC 7644
§3.12 error; neither can do anything with Django's HTML page. Browser paths keep Django's pages.

Two ways an exception reaches us, one answer for both:
- raised by a view (DRF re-raises what it does not know): `ApiErrorMiddleware.process_exception`;
- raised anywhere else in the request (a middleware): Django calls `handler500` from inside its
  `except` block, so `sys.exc_info()` still holds it.
A lost database (core.outage) is an operational condition, not a bug: 503 with `Retry-After`, one log
line naming the exception class, no traceback.
Django closes a connection that failed when its request ends (`close_if_unusable_or_obsolete`, with
CONN_HEALTH_CHECKS off too), so the next request connects afresh. Anything else is a 500 that names a
request id, logged once with that id and the traceback so an operator can find it from the client's
report. Each such request is marked as logged, so Django's `django.request` logger does not add a second
line for it.

It lives in config/ because it answers for every surface (SCIM errors, the envelope, Django's pages) and
only the project's wiring uses it: the settings (middleware, CSRF view) and config/urls.py (handlers).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from types import TracebackType

from django.core.exceptions import BadRequest, PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt

from core.envelope import fail_json
from core.logfilters import mark_logged
from core.outage import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS
from core.requestid import ENVIRON_KEY, HEADER, request_id_from
from core.surfaces import ADMIN, REST, SCIM, surface_of
from scim.protocol.errors import ScimError
from setuplinks.headers import is_setup_path
from setuplinks.views import csrf_refused

logger = logging.getLogger(__name__)

_DJANGO_ANSWERS = (Http404, PermissionDenied, SuspiciousOperation, BadRequest)

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def surface(path: str) -> str:
    """The format of the path's errors: "scim", "envelope" (the REST and admin APIs) or "html"."""
    surface = surface_of(path)
    if surface == SCIM:
        return "scim"
    if surface in (REST, ADMIN):
        return "envelope"
    return "html"


def request_id(request: HttpRequest) -> str:
    """The request's id: kept on the request once chosen, so every line and header agree."""
    rid = getattr(request, "request_id", None)
    if rid is None:
        rid = request_id_from(request.META.get(ENVIRON_KEY))
        request.request_id = rid  # type: ignore[attr-defined]
    return rid


def scim_error(status: int, detail: str) -> JsonResponse:
    # The SCIM surface's one error builder (scim.protocol.errors); Entra wants application/scim+json on errors too.
    return JsonResponse(ScimError(status, detail).body(), status=status, content_type="application/scim+json")


def _logged(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    # Our own line is the one line: core.logfilters drops Django's second one for this request.
    mark_logged(request)
    return response


def database_unavailable(kind: str) -> HttpResponse:
    message = "The database is unavailable; retry shortly."
    if kind == "scim":
        response: HttpResponse = scim_error(503, message)
    elif kind == "envelope":
        response = fail_json(message, 503)
    else:
        response = HttpResponse(
            f"<!doctype html><title>Service unavailable</title><h1>Service unavailable</h1><p>{message}</p>",
            status=503,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def exception_response(request: HttpRequest, exc_info: ExcInfo) -> HttpResponse | None:
    """The answer to an unexpected exception, logged once; None for a bug on a browser or SCIM path
    (handler500's page then, logged by Django as usual)."""
    kind = surface(request.path)
    exc = exc_info[1]
    rid = request_id(request)
    if isinstance(exc, DATABASE_UNAVAILABLE):
        # A known operational condition: the class says enough, a traceback per request would drown
        # the log during an outage. The message can carry the host and user name, so it stays out.
        logger.error(
            "database unavailable: %s on %s %s (request id %s)",
            type(exc).__name__,
            request.method,
            request.path,
            rid,
        )
        response = database_unavailable(kind)
    elif kind == "envelope":
        logger.error(
            "unhandled %s on %s %s (request id %s)",
            type(exc).__name__,
            request.method,
            request.path,
            rid,
            exc_info=exc_info,
        )
        response = fail_json(f"Internal server error (request id {rid}).", 500)
    else:
        return None
    response[HEADER] = rid
    return _logged(request, response)


class ApiErrorMiddleware:
    """Outermost middleware: API answers carry `X-Request-Id` (the client's own when it is sane, else a new
    one), and an exception a view raises leaves through exception_response, on any DEBUG setting."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if surface(request.path) == "envelope" and not response.has_header(HEADER):
            response[HEADER] = request_id(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, _DJANGO_ANSWERS):
            return None  # Django turns these into 400/403/404 through the handlers below
        return exception_response(request, (type(exception), exception, exception.__traceback__))


def _surface_error(
    request: HttpRequest, status: int, message: str, html: Callable[[], HttpResponse], *, scim_message: str = ""
) -> HttpResponse:
    """`status` in the format of the request's surface, with its request id; `html()` for browser paths."""
    kind = surface(request.path)
    if kind == "scim":
        response: HttpResponse = scim_error(status, scim_message or message)
    elif kind == "envelope":
        response = fail_json(message, status)
    else:
        return html()
    response[HEADER] = request_id(request)
    return response


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # Django's SuspiciousOperation family (a Host header ALLOWED_HOSTS refuses, too many fields) ends here.
    if isinstance(exception, SuspiciousOperation):
        # django.security has logged it (one WARNING line, core.logfilters), with the request id: that
        # is the request's line, config.requestscope adds none.
        mark_logged(request)
    if isinstance(exception, RequestDataTooBig):
        return _surface_error(
            request, 413, "The request body is too large.", lambda: defaults.bad_request(request, exception)
        )
    return _surface_error(request, 400, "Bad request.", lambda: defaults.bad_request(request, exception))


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _surface_error(request, 403, "Forbidden.", lambda: defaults.permission_denied(request, exception))


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _surface_error(
        request,
        404,
        "Not found.",
        lambda: defaults.page_not_found(request, exception),
        scim_message="Resource not found.",
    )


def handler500(request: HttpRequest) -> HttpResponse:
    exc_type, exc, tb = sys.exc_info()
    if exc_type is not None and exc is not None:
        response = exception_response(request, (exc_type, exc, tb))
        if response is not None:
            return response
    message = f"Internal server error (request id {request_id(request)})."
    return _surface_error(request, 500, message, lambda: defaults.server_error(request))


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's CSRF check refuses an unsafe method on a view that is not CSRF-exempt. The API views
    are (bearer credentials, no cookies), so on an API path this means a route that does not exist for
    the method; the client still gets its surface's 403, not Django's HTML page. A setup page's form
    gets the setup page's own explanation (reload and try again)."""
    if is_setup_path(request.path_info):
        return csrf_refused(request, reason)
    return _surface_error(request, 403, "Forbidden.", lambda: csrf.csrf_failure(request, reason))


@csrf_exempt
def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Catch-all for unknown paths under the API prefixes. With DEBUG on, Django answers an unmatched
    path with its HTML technical page instead of calling handler404, so the dev server needs a route."""
    return handler404(request)
