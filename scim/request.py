"""One SCIM request, whichever way it came in, the route it takes and what answering it gives: the types
the processor (scim/processor.py), the route table (scim/routes.py) and the handlers share.

Both HTTP entries (scim.http.wsgi and Django's view, through `scim.http.views.http_request`) and the embedding
API (`scim.api.scim_request`, from its dict) find the request's route in the table and build it with
`ScimRequest.build`, so every request is normalized by the same rule before it is processed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Outcome(NamedTuple):
    """What a handler answers: the status, the document (None: no body), the change's events for the
    embedding API's callback, and the version of the one resource answered (the ETag, RFC 7644 §3.14)."""

    status: int
    data: Any = None
    events: Sequence[dict[str, Any]] = ()
    version: str | None = None


class Method(NamedTuple):
    """One method of a route: what answers it and what it reads before authentication."""

    # A SCIM route's: called as handler(directory, request, body, first_read) once the request is
    # authenticated; `body` is the parsed document when `body` is true, else None. The token endpoint's:
    # the grant, called by its adapter (scim/http/token_endpoint.py) with the form it read.
    handler: Callable[..., Any]
    # It takes a body (RFC 7644 §3.3 POST, §3.5.1 PUT, §3.5.2 PATCH, §3.4.3 POST .search): only then is the
    # body read, and it must be JSON.
    body: bool
    # What the request reads by keys taken from its URL, fetched with the directory's lookup
    # (scim.selectors.FirstRead); None: nothing.
    first_read: Callable[[ScimRequest], Any] | None = None


# Who answers a route: the SCIM processor (RFC 7644), or the token endpoint of the directory's OAuth client
# (RFC 6749, contract §4.3), which lives under the SCIM prefix but answers in its own format.
SCIM = "scim"
OAUTH = "oauth"


@dataclass(frozen=True, slots=True)
class Route:
    """What the route table says about one resource type and shape of id (none, an id, `.search`)."""

    resource_type: str  # as /metrics and the log lines name it, e.g. "serviceproviderconfig"
    methods: dict[str, Method]  # in the order the `Allow` header lists them
    allow: str  # the `Allow` header of a 405 (RFC 9110 §15.5.6)
    protocol: str = SCIM  # SCIM or OAUTH


def resource_name(value: Any) -> str:
    """A resource type as the route table names it: lower case, no slashes, "" for none."""
    return str(value or "").strip("/").lower()


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
    resource_type: str  # the route's ("users", "groups", ".search", a discovery type), else as sent, lower case
    resource_id: Any  # None for a collection
    query: Any = field(repr=False)
    body: Any = field(repr=False)
    secret: Any = field(repr=False)
    # The If-Match / If-None-Match headers as sent (RFC 7644 §3.14), None when absent.
    if_match: Any = None
    if_none_match: Any = None
    # The route table's entry for the resource type and id (scim.routes.scim_route); None: no such
    # resource, a 404 once the request is authenticated.
    route: Route | None = field(default=None, repr=False)

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
        route: Route | None,
        if_match: Any = None,
        if_none_match: Any = None,
    ) -> ScimRequest:
        """The request with its method, resource type, id and query in the processor's form: a missing
        method is GET, names are case-insensitive, an empty id or query is none. `route` is what
        `scim_route(resource_type, resource_id)` found."""
        return cls(
            method=str(method or "GET").upper(),
            directory_id=directory_id,
            resource_type=route.resource_type if route is not None else resource_name(resource_type),
            resource_id=resource_id or None,
            query=query or {},
            body=body,
            secret=secret,
            if_match=if_match,
            if_none_match=if_none_match,
            route=route,
        )
