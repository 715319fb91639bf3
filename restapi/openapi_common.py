"""OpenAPI building blocks shared by every REST operation: the success and error envelopes, the error
responses, and the query and path parameters many routes take."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from core.apiinput import PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_NUMBER_MAX


class ErrorSerializer(serializers.Serializer):
    message = serializers.CharField()
    code = serializers.IntegerField(help_text="The HTTP status.")


class ErrorEnvelope(serializers.Serializer):
    data = serializers.JSONField(allow_null=True, help_text="Always null on failure.")
    error = ErrorSerializer()


def envelope(name: str, data: serializers.Field) -> type[serializers.Serializer]:
    """A `{data, error: null}` success envelope around `data`, named for the schema."""
    return type(
        name,
        (serializers.Serializer,),
        {"data": data, "error": serializers.JSONField(allow_null=True, help_text="Always null on success.")},
    )


EmptyEnvelope = envelope("EmptyEnvelope", serializers.DictField(help_text="An empty object."))


# Query parameters, with the bounds core.apiinput enforces.
_PAGE_NUMBER = {"type": "integer", "minimum": 0, "maximum": PAGE_NUMBER_MAX}
TENANT = OpenApiParameter(
    "tenant", {"type": "string", "minLength": 1}, required=True, description="Tenant of the directories."
)
PRODUCT = OpenApiParameter(
    "product", {"type": "string", "minLength": 1}, required=True, description="Product of the directories."
)
PAGE_OFFSET = OpenApiParameter("pageOffset", _PAGE_NUMBER, required=False, description="Rows to skip (default 0).")
PAGE_LIMIT = OpenApiParameter(
    "pageLimit",
    _PAGE_NUMBER,
    required=False,
    description=f"Rows to return (default {PAGE_LIMIT_DEFAULT}); more than {PAGE_LIMIT_MAX} is served as "
    f"{PAGE_LIMIT_MAX}.",
)


def path_uuid(name: str) -> OpenApiParameter:
    # The route takes any string so that a malformed id is an enveloped 404, but ids are UUIDs.
    return OpenApiParameter(name, OpenApiTypes.UUID, OpenApiParameter.PATH)


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorEnvelope, description=description)


# Every error a REST operation can answer, each in the envelope. 400 covers the query checks every
# operation makes (a NUL or an unpaired surrogate in any query value); 406 an Accept header that rules
# out application/json; 500 and 503 are documented because they are real answers (a bug, with a request
# id to quote; the database unreachable, with Retry-After), not because a client should see them.
ERRORS = {
    400: _error("Invalid input; the message names the parameter or field"),
    401: _error("Missing or invalid API key"),
    404: _error("Not found (also another tenant's resource, and a malformed id)"),
    409: _error("The request conflicts with the resource's state; the message says how"),
    406: _error("The Accept header rules out application/json"),
    410: _error("What was asked for is no longer kept"),
    413: _error("The request body is larger than 1 MiB"),
    429: _error(
        "Over the API key's rate limit (API_RATE_LIMIT requests per minute); nothing was done. Retry after "
        "Retry-After seconds"
    ),
    500: _error("Unexpected error; the message carries the request id, also sent as X-Request-Id"),
    503: _error("The database is unavailable; retry after Retry-After seconds"),
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """The error responses of an operation: 400, 401, 406, 429, 500 and 503 always, plus `statuses`."""
    return {status: ERRORS[status] for status in sorted({400, 401, 406, 429, 500, 503, *statuses})}
