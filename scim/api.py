"""The SCIM endpoint as a Python function, without HTTP (contract §4, the embedding API).

    from scim.api import scim_request
    result = scim_request({"method": "GET", "directoryId": "…", "apiSecret": "…",
                           "resourceType": "users", "resourceId": None, "body": None,
                           "query": {"filter": 'userName eq "a@b.c"', "count": 10, "startIndex": 1}},
                          callback=print)
    result == {"status": 200, "data": {…ListResponse…}}

It finds the request's route in the route table (scim/routes.py), builds the one request type
(scim/request.py) from the dict and hands it to the processor (scim/processor.py), which the HTTP
entries use too. `callback`, when given, is called with each
contract §5 event payload after the change has committed.
"""

from __future__ import annotations

from typing import Any

from scim.processor import Callback, Result, process
from scim.protocol.errors import invalid_syntax
from scim.request import SCIM, ScimRequest
from scim.routes import scim_route


def scim_request(request: dict[str, Any], callback: Callback | None = None) -> Result:
    """Process one SCIM request given as {method, body, directoryId, resourceId, resourceType,
    apiSecret, query}; returns {"status": int, "data": dict | None}."""
    if not isinstance(request, dict):
        error = invalid_syntax("The request must be an object.")
        return {"status": error.status, "data": error.body()}
    resource_type, resource_id = request.get("resourceType"), request.get("resourceId")
    route = scim_route(resource_type, resource_id)
    if route is not None and route.protocol != SCIM:
        route = None  # the token endpoint is HTTP's (RFC 6749): here it is no SCIM resource, a 404
    result = process(
        ScimRequest.build(
            method=request.get("method"),
            directory_id=request.get("directoryId"),
            resource_type=resource_type,
            resource_id=resource_id,
            query=request.get("query"),
            body=request.get("body"),
            secret=request.get("apiSecret"),
            route=route,
        ),
        callback,
    )
    # The contract's result is {status, data}; a resource's version is in its meta.version.
    return {"status": result["status"], "data": result["data"]}
