"""The one error type of the SCIM surface, rendered as an RFC 7644 §3.12 error body."""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimError(Exception):
    """A failure with its HTTP status, a human `detail` and, where RFC 7644 Table 9 has one, a `scimType`."""

    def __init__(self, status: int, detail: str, *, scim_type: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.scim_type = scim_type

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"schemas": [ERROR_SCHEMA], "status": str(self.status), "detail": self.detail}
        if self.scim_type:
            body["scimType"] = self.scim_type
        return body


def invalid_filter(detail: str) -> ScimError:
    return ScimError(400, detail, scim_type="invalidFilter")


def invalid_value(detail: str) -> ScimError:
    return ScimError(400, detail, scim_type="invalidValue")


def invalid_syntax(detail: str) -> ScimError:
    return ScimError(400, detail, scim_type="invalidSyntax")


def invalid_path(detail: str) -> ScimError:
    return ScimError(400, detail, scim_type="invalidPath")


def no_target(detail: str) -> ScimError:
    return ScimError(400, detail, scim_type="noTarget")


def mutability(detail: str) -> ScimError:
    return ScimError(400, detail, scim_type="mutability")


def not_found(resource: str = "Resource") -> ScimError:
    return ScimError(404, f"{resource} not found.")


def uniqueness(what: str) -> ScimError:
    return ScimError(409, f"{what} already exists in this directory.", scim_type="uniqueness")
