"""The SCIM route table (contract §4): which URLs exist, which methods each takes, which of those read a
body, and what answers them. Nothing else decides it.

A request is routed in two steps, each a single lookup:

1. Its path, under PREFIX, split into the view arguments `directory_id`, `resource` and `resource_id`
   (`scim_path_args`, by PATTERNS): scim/http/wsgi.py matches paths by it, and scim/http/urls.py builds
   Django's `urlpatterns` from the same strings (mounted at PREFIX by config/urls.py).
2. Its resource type and the shape of its id (none, an id, `.search`) looked up in ROUTES (`scim_route`,
   one dict lookup), once per request, by whichever entry received it (scim/http/views.py, scim/api.py):
   the `Route` rides on the request. No route is a 404; a method the route lacks is a 405 whose
   `Allow` is the route's; the route's `Method` says whether the body is read and which handler
   answers (scim/processor.py calls it once the request is authenticated).

One route is not a SCIM resource: `oauth/token` (core.surfaces.SCIM_TOKEN_PATH), the token endpoint of the
directory's OAuth client (contract §4.3). The same lookup finds it, its route's `protocol` is OAUTH, and
the HTTP adapter hands it to the token endpoint (scim/http/token_endpoint.py), which answers in RFC 6749's format,
its 405 and `Allow` from this route too. The embedding API has no token endpoint (scim/api.py).
"""

from __future__ import annotations

import re
from typing import Any

from core.surfaces import SCIM_BASE_PATH, SCIM_TOKEN_PATH
from scim import reads, writes
from scim.oauth import client_credentials_grant
from scim.request import OAUTH, Method, Route, resource_name

PREFIX = SCIM_BASE_PATH + "/"

# In order; the first match wins. `[^/]+` is one path segment (as Django's `str` converter), `.+` the
# rest of the path, slashes included (as its `path` converter): a resource id is taken as sent.
# Each pattern matches the whole path after the prefix or nothing: Django's resolver full-matches an
# endpoint regex that ends in `$`, and `scim_path_args` uses `fullmatch`, so the two agree on every path.
PATTERNS = (
    r"(?P<directory_id>[^/]+)/?",
    r"(?P<directory_id>[^/]+)/(?P<resource>[^/]+)/?",
    r"(?P<directory_id>[^/]+)/(?P<resource>[^/]+)/(?P<resource_id>.+)",
)
_COMPILED = tuple(re.compile(pattern) for pattern in PATTERNS)

# The shape of a resource id: none (a collection), `.search` (RFC 7644 §3.4.3), or an id.
COLLECTION = "collection"
SEARCH = "search"
ID = "id"
ANY = (COLLECTION, SEARCH, ID)

# (resource type, shapes of its id, method, handler, takes a body, first read). A handler is called as
# handler(directory, request, body, first read) and returns an Outcome (scim/request.py); a first
# read comes with the directory's lookup, before the secret is checked (scim/authentication.py).
_TABLE = (
    ("users", (COLLECTION,), "GET", reads.users_list, False, reads.users_first_read),
    ("users", (COLLECTION,), "POST", writes.user_create, True, None),
    ("users", (ID,), "GET", reads.user_get, False, reads.user_first_read),
    ("users", (ID,), "PUT", writes.user_replace, True, reads.user_first_write_read),
    ("users", (ID,), "PATCH", writes.user_patch, True, reads.user_first_write_read),
    ("users", (ID,), "DELETE", writes.user_delete, False, reads.user_first_write_read),
    ("users", (SEARCH,), "POST", reads.users_search, True, None),
    ("groups", (COLLECTION,), "GET", reads.groups_list, False, None),
    ("groups", (COLLECTION,), "POST", writes.group_create, True, None),
    ("groups", (ID,), "GET", reads.group_get, False, None),
    ("groups", (ID,), "PUT", writes.group_replace, True, None),
    ("groups", (ID,), "PATCH", writes.group_patch, True, None),
    ("groups", (ID,), "DELETE", writes.group_delete, False, None),
    ("groups", (SEARCH,), "POST", reads.groups_search, True, None),
    # Users then groups. A path below it is the same search (its id is not looked at).
    (".search", ANY, "POST", reads.all_search, True, None),
    # Discovery (RFC 7644 §4): the handlers answer an id below them themselves (one resource type or
    # schema, or a 404), whatever its shape.
    ("serviceproviderconfig", ANY, "GET", reads.service_provider_config, False, None),
    ("resourcetypes", ANY, "GET", reads.resource_types, False, None),
    ("schemas", ANY, "GET", reads.schemas, False, None),
)
# Other names of a resource type in a URL: some clients ask for the plural of the singleton.
_ALIASES = {"serviceproviderconfigs": "serviceproviderconfig"}


def _routes() -> dict[tuple[str, str], Route]:
    methods: dict[tuple[str, str], dict[str, Method]] = {}
    for resource_type, shapes, method, handler, body, first_read in _TABLE:
        for shape in shapes:
            methods.setdefault((resource_type, shape), {})[method] = Method(handler, body, first_read)
    routes = {key: Route(key[0], found, ", ".join(found)) for key, found in methods.items()}
    for alias, resource_type in _ALIASES.items():
        routes.update({(alias, shape): routes[(resource_type, shape)] for shape in ANY})
    return routes


ROUTES = _routes()

# The token endpoint: `oauth/token` below the directory's SCIM base, exactly (RFC 6749 §3.2: POST only).
_TOKEN_RESOURCE, _TOKEN_ID = SCIM_TOKEN_PATH.strip("/").split("/")
TOKEN_ROUTE = Route("oauth_token", {"POST": Method(client_credentials_grant, True)}, "POST", OAUTH)


def scim_route(resource_type: Any, resource_id: Any) -> Route | None:
    """The route of a resource type (a name in any case) and a resource id; None when there is none."""
    if resource_id == _TOKEN_ID and resource_type == _TOKEN_RESOURCE:
        return TOKEN_ROUTE
    if not resource_id:
        shape = COLLECTION
    elif isinstance(resource_id, str) and resource_id.lower() == ".search":
        shape = SEARCH
    else:
        shape = ID
    return ROUTES.get((resource_name(resource_type), shape))


def scim_path_args(path: str) -> dict[str, str] | None:
    """The view arguments of a SCIM path (decoded, with its prefix), or None when no pattern matches it."""
    if not path.startswith(PREFIX):
        return None
    rest = path[len(PREFIX) :]
    for pattern in _COMPILED:
        match = pattern.fullmatch(rest)
        if match:
            return match.groupdict()
    return None
