"""The {data, error} envelope of the REST and admin APIs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from core.errors import RosterError


class EnvelopeOnly:
    """For API views: DRF answers OPTIONS with a bare metadata object; every answer here is an envelope,
    so OPTIONS is an enveloped 405 (there is no browser client to pre-flight for), and the Allow header
    of every answer says so by leaving it out."""

    metadata_class = None

    @property
    def allowed_methods(self) -> list[str]:
        return [m for m in super().allowed_methods if m != "OPTIONS"]  # type: ignore[misc]


def ok(data: Any, status: int = 200, *, extra: dict[str, Any] | None = None) -> Response:
    """A success; `extra` adds top-level members beside data and error (what a list reports about
    itself, such as the changes feed's `events`)."""
    return Response({"data": data, "error": None, **(extra or {})}, status=status)


def fail(message: str, status: int) -> Response:
    return Response({"data": None, "error": {"message": message, "code": status}}, status=status)


def fail_json(message: str, status: int) -> JsonResponse:
    """The envelope for plain Django views (404/500 handlers, middleware)."""
    return JsonResponse({"data": None, "error": {"message": message, "code": status}}, status=status)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's exception handler: every error of an API view leaves in the envelope. What it does not know
    (a bug, a lost database) goes on to config.errorpages, the one funnel for those."""
    if isinstance(exc, RosterError):
        return fail(exc.message, exc.status)
    if isinstance(exc, Http404):
        # Raised by DRF itself too, e.g. for a `?format=` no renderer has.
        return fail("Not found.", 404)
    if isinstance(exc, PermissionDenied):
        return fail("Forbidden.", 403)
    if isinstance(exc, exceptions.APIException):
        detail = exc.detail
        if isinstance(detail, dict | list):
            message = "; ".join(_flatten(detail)) or "Bad request."
        else:
            message = str(detail)
        response = fail(message, exc.status_code)
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            response.status_code = 401
            response.data["error"]["code"] = 401
            response["WWW-Authenticate"] = 'Bearer realm="roster"'
        return response
    return None


def _flatten(detail: Any, prefix: str = "") -> list[str]:
    if isinstance(detail, dict):
        out: list[str] = []
        for key, value in detail.items():
            out += _flatten(value, f"{key}: " if key != "non_field_errors" else "")
        return out
    if isinstance(detail, list):
        out = []
        for item in detail:
            out += _flatten(item, prefix)
        return out
    return [f"{prefix}{detail}"]
