"""HTTP adapter of the SCIM endpoint: headers and bytes in, scim.api.scim_request, bytes out.

Every answer, errors included, is `application/scim+json` (INTEROP E11). Body size and content type
are checked before anything else so that a huge or non-JSON body is never read into the processor.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from scim.api import MAX_BODY_BYTES, allowed_methods, scim_request
from scim.errors import ScimError

logger = logging.getLogger("roster.scim")

CONTENT_TYPE = "application/scim+json"
ACCEPTED_TYPES = ("application/scim+json", "application/json")
RESOURCES = {
    "users": "users",
    "groups": "groups",
    "serviceproviderconfig": "serviceproviderconfig",
    "serviceproviderconfigs": "serviceproviderconfig",
    "resourcetypes": "resourcetypes",
    "schemas": "schemas",
}


def _respond(status: int, data: Any, *, allow: str | None = None) -> HttpResponse:
    response = HttpResponse(b"" if data is None else orjson.dumps(data), status=status, content_type=CONTENT_TYPE)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="Roster SCIM"'
    if status == 405 and allow:
        response["Allow"] = allow
    if status == 201 and isinstance(data, dict):
        location = (data.get("meta") or {}).get("location")
        if location:
            response["Location"] = location
    return response


def _error(exc: ScimError) -> HttpResponse:
    return _respond(exc.status, exc.body())


def _bearer(request: HttpRequest) -> str | None:
    # META, not request.headers: the latter builds a dict of every header to answer one lookup.
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


@csrf_exempt
def scim_view(request: HttpRequest, directory_id: str, resource: str = "", resource_id: str = "") -> HttpResponse:
    try:
        return _handle(request, directory_id, resource, resource_id)
    except ScimError as exc:
        return _error(exc)
    except Exception:
        # A safety net, not a code path: log without the body or query (they may carry PII or secrets).
        logger.exception("SCIM request failed: %s %s", request.method, request.path)
        return _error(ScimError(500, "Internal error."))


def _handle(request: HttpRequest, directory_id: str, resource: str, resource_id: str) -> HttpResponse:
    method = request.method or "GET"
    resource_id = resource_id.strip("/")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > MAX_BODY_BYTES:
        raise ScimError(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    resource_type = RESOURCES.get(resource.lower(), resource.lower() or "-")
    allowed = allowed_methods(resource_type, bool(resource_id))
    wants_body = method in ("POST", "PUT", "PATCH") and allowed is not None and method in allowed
    body = request.body if wants_body else b""
    if body and request.content_type not in ACCEPTED_TYPES:
        raise ScimError(415, "Send the body as application/scim+json or application/json.")
    result = scim_request(
        {
            "method": method,
            "body": body if wants_body else None,
            "directoryId": directory_id,
            "resourceId": resource_id or None,
            "resourceType": resource_type,
            "apiSecret": _bearer(request),
            "query": {k: request.GET.get(k) for k in request.GET},
        }
    )
    return _respond(result["status"], result["data"], allow=", ".join(allowed or ("GET",)))
