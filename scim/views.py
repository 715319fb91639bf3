"""HTTP adapter of the SCIM endpoint: headers and bytes in, scim.api.scim_request, bytes out.

`scim_answer` is the adapter; `scim_view` feeds it from Django's request, scim.wsgi straight from the
WSGI environ (the path production takes). Every answer, errors included, is `application/scim+json`
(interop E11). Body size and content type are checked before anything else so that a huge or non-JSON
body is never read into the processor.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from core.logfilters import mark_logged
from core.requestid import ENVIRON_KEY, HEADER, request_id_from
from scim.api import MAX_BODY_BYTES, allowed_methods, scim_request
from scim.errors import ScimError, invalid_syntax

logger = logging.getLogger("roster.scim")

CONTENT_TYPE = "application/scim+json"
RETRY_AFTER_SECONDS = 5  # a restart or failover of PostgreSQL takes seconds; IdPs retry on 503 with Retry-After
ACCEPTED_TYPES = ("application/scim+json", "application/json")
RESOURCES = {
    "users": "users",
    "groups": "groups",
    "serviceproviderconfig": "serviceproviderconfig",
    "serviceproviderconfigs": "serviceproviderconfig",
    "resourcetypes": "resourcetypes",
    "schemas": "schemas",
}


class Request(NamedTuple):
    """What the SCIM endpoint reads of an HTTP request, from Django's request (`scim_view`) or straight
    from the WSGI environ (scim.wsgi). The query and the body are read only when needed."""

    method: str
    path: str  # for the log line of an internal error only
    content_length: str | None
    content_type: Callable[[], str]
    authorization: str
    query: Callable[[], dict[str, str | None]]
    body: Callable[[], bytes]
    request_id: str | None = None  # the incoming X-Request-Id, kept when sane (core.requestid)


def scim_answer(
    request: Request, directory_id: str, resource: str = "", resource_id: str = ""
) -> tuple[int, bytes, list[tuple[str, str]]]:
    """The status, body and headers of the answer to one SCIM request; never raises.

    The one error funnel of the SCIM surface: whatever goes wrong below, the answer is SCIM JSON with
    the request's id (`X-Request-Id`, on every answer). The log lines name the method, the path and the
    request id, never the body, the query or the Authorization header (they carry PII and secrets)."""
    request_id = request_id_from(request.request_id)
    allow = data = None
    extra: list[tuple[str, str]] = []
    try:
        status, data, allow = _handle(request, directory_id, resource, resource_id)
        body = b"" if data is None else encode(data)
    except ScimError as exc:
        status, body = exc.status, orjson.dumps(exc.body())
    except (SuspiciousOperation, BadRequest) as exc:
        # Django's own refusals of a malformed request, e.g. more query parameters than
        # DATA_UPLOAD_MAX_NUMBER_FIELDS: a 400 in SCIM's format (the class only, not the request).
        status, body = 400, orjson.dumps(invalid_syntax(f"The request was refused ({type(exc).__name__}).").body())
    except (OperationalError, InterfaceError) as exc:
        # The database is down, restarting or dropped this connection: the client may retry, and a
        # traceback per request would flood the log during an outage. Django closes the broken
        # connection when the request finishes (request_finished), so the next request connects anew.
        logger.warning(
            "SCIM request %s %r answered 503, database unavailable (%s) request_id=%s",
            request.method,
            request.path,
            type(exc).__name__,
            request_id,
        )
        status = 503
        body = orjson.dumps(ScimError(503, f"The database is unavailable; retry later (request {request_id}).").body())
        extra.append(("Retry-After", str(RETRY_AFTER_SECONDS)))
    except Exception:
        # A safety net, not a code path: the traceback and the request id, so the answer can be traced.
        logger.exception("SCIM request %s %r failed request_id=%s", request.method, request.path, request_id)
        status = 500
        body = orjson.dumps(ScimError(500, f"Internal error (request {request_id}).").body())
    headers = [("Content-Type", CONTENT_TYPE), (HEADER, request_id), *extra]
    if status == 401:
        headers.append(("WWW-Authenticate", 'Bearer realm="Roster SCIM"'))
    if status == 405 and allow:
        headers.append(("Allow", allow))
    if status == 201 and isinstance(data, dict):
        location = (data.get("meta") or {}).get("location")
        if location:
            headers.append(("Location", location))
    return status, body, headers


def encode(data: dict[str, Any]) -> bytes:
    """orjson, or the standard library's encoder for a document orjson refuses: a number beyond 64 bits
    that a row holds from before the input gate (scim.inputs) existed must not make a list unreadable.
    Anything the fallback refuses too (NaN, an unpaired surrogate) reaches the error funnel."""
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def bearer(authorization: str) -> str | None:
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


@csrf_exempt
def scim_view(request: HttpRequest, directory_id: str, resource: str = "", resource_id: str = "") -> HttpResponse:
    status, body, headers = scim_answer(
        Request(
            method=request.method or "GET",
            path=request.path,
            content_length=request.META.get("CONTENT_LENGTH"),
            content_type=lambda: request.content_type or "",
            # META, not request.headers: the latter builds a dict of every header to answer one lookup.
            authorization=request.META.get("HTTP_AUTHORIZATION", ""),
            query=lambda: {k: request.GET.get(k) for k in request.GET},
            body=lambda: request.body,
            request_id=request.META.get(ENVIRON_KEY),
        ),
        directory_id,
        resource,
        resource_id,
    )
    response = HttpResponse(body, status=status, content_type=CONTENT_TYPE)
    if status >= 500:
        # scim_answer logged it once, with the request id; django.request would log a second line.
        mark_logged(request)
    for name, value in headers[1:]:  # the first is the Content-Type, set above
        response[name] = value
    return response


def _handle(
    request: Request, directory_id: str, resource: str, resource_id: str
) -> tuple[int, dict[str, Any] | None, str]:
    method = request.method
    resource_id = resource_id.strip("/")
    try:
        length = int(request.content_length or 0)
    except ValueError:
        length = 0
    if length > MAX_BODY_BYTES:
        raise ScimError(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    resource_type = RESOURCES.get(resource.lower(), resource.lower() or "-")
    allowed = allowed_methods(resource_type, resource_id)
    wants_body = method in ("POST", "PUT", "PATCH") and allowed is not None and method in allowed
    body = request.body() if wants_body else b""
    if body and request.content_type() not in ACCEPTED_TYPES:
        raise ScimError(415, "Send the body as application/scim+json or application/json.")
    result = scim_request(
        {
            "method": method,
            "body": body if wants_body else None,
            "directoryId": directory_id,
            "resourceId": resource_id or None,
            "resourceType": resource_type,
            "apiSecret": bearer(request.authorization),
            "query": request.query(),
        }
    )
    return result["status"], result["data"], ", ".join(allowed or ("GET",))
