"""`POST …/.search` (RFC 7644 §3.4.3): a SearchRequest body turned into the query a GET list takes.

Identity providers and tools use it when a filter is too long for a URL. The body's members are the
GET list's query parameters (`sortBy` and `sortOrder` included); their names are case-insensitive like
every SCIM attribute name.
"""

from __future__ import annotations

from typing import Any

from scim.protocol.errors import invalid_syntax, invalid_value

SEARCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
_PARAMETERS = {
    "filter": "filter",
    "startindex": "startIndex",
    "count": "count",
    "attributes": "attributes",
    "excludedattributes": "excludedAttributes",
    "sortby": "sortBy",
    "sortorder": "sortOrder",
}


def search_query(body: Any) -> dict[str, Any]:
    """The query of a GET list equivalent to a SearchRequest body; 400 for a body that is not one."""
    if not isinstance(body, dict):
        raise invalid_syntax("The SearchRequest body must be a JSON object.")
    query: dict[str, Any] = {}
    for key, value in body.items():
        lowered = key.lower()
        if lowered == "schemas":
            if not isinstance(value, list) or SEARCH_SCHEMA not in value:
                raise invalid_syntax(f"schemas must contain {SEARCH_SCHEMA}.")
        elif lowered in _PARAMETERS:
            name = _PARAMETERS[lowered]
            if value is None:
                continue
            if name in ("attributes", "excludedAttributes"):
                if isinstance(value, str):
                    value = [value]
                if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                    raise invalid_value(f"{name} must be an array of attribute names.")
            elif name in ("filter", "sortBy", "sortOrder") and not isinstance(value, str):
                raise invalid_value(f"{name} must be a string.")
            elif name in ("startIndex", "count") and (isinstance(value, bool) or not isinstance(value, int)):
                raise invalid_value(f"{name} must be an integer.")
            query[name] = value
    return query
