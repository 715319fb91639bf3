"""One SCIM request, whichever way it came in: the type `scim.dispatch.process` takes.

Both HTTP entries (scim.http.wsgi and Django's view, through `scim.http.views.http_request`) and the embedding
API (`scim.api.scim_request`, from its dict) build it with `ScimRequest.build`, so every request is
normalized by the same rule before it is processed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ScimRequest:
    """What the processor reads of a request.

    Over HTTP the values are strings, the query a dict of strings (or None) and the body bytes (None
    when the method sends none). An embedding caller may pass anything (a parsed body, a number for an
    id): the processor checks the values in the contract's order, authentication first, so they are
    kept as given and typed `Any`. The secret, the query and the body never appear in the repr (they
    carry credentials and personal data; the log lines leave them out for the same reason)."""

    method: str  # upper case
    directory_id: Any
    resource_type: str  # lower case, no slashes: "users", "groups", ".search", a discovery type, or "-"
    resource_id: Any  # None for a collection
    query: Any = field(repr=False)
    body: Any = field(repr=False)
    secret: Any = field(repr=False)
    # The If-Match / If-None-Match headers as sent (RFC 7644 §3.14), None when absent.
    if_match: Any = None
    if_none_match: Any = None

    @classmethod
    def build(
        cls,
        *,
        method: Any,
        directory_id: Any,
        resource_type: Any,
        resource_id: Any,
        query: Any,
        body: Any,
        secret: Any,
        if_match: Any = None,
        if_none_match: Any = None,
    ) -> ScimRequest:
        """The request with its method, resource type, id and query in the processor's form: a missing
        method is GET, names are case-insensitive, an empty id or query is none."""
        return cls(
            method=str(method or "GET").upper(),
            directory_id=directory_id,
            resource_type=str(resource_type or "").strip("/").lower(),
            resource_id=resource_id or None,
            query=query or {},
            body=body,
            secret=secret,
            if_match=if_match,
            if_none_match=if_none_match,
        )
