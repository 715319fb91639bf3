"""Where Roster's surfaces live in the URL space: which surface a path belongs to, and a directory's
SCIM base. The one home of these prefixes: the request scope counts a request by its surface
(config/requestscope.py), the error pages answer in its surface's format (config/errorpages.py), and
the SCIM endpoint, its discovery documents and the REST API's Directory all name the same base.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

SCIM = "scim"
REST = "rest"
ADMIN = "admin"
PORTAL = "portal"
SETUP = "setup"
STATIC = "static"
OTHER = "other"

# A surface owns its prefix itself and everything below it: "/api/v1" is the REST API's as "/api/v1/x"
# is (Django's catch-all answers both in the envelope), "/api/v1x" is no surface's.
_PREFIXES = (
    ("/api/scim", SCIM),
    ("/api/v1", REST),
    ("/auditlog", ADMIN),
    ("/portal", PORTAL),
    ("/setup", SETUP),
    ("/static", STATIC),
)

# The SCIM endpoint of a directory is SCIM_BASE_PATH/<directory id> (contract §4).
SCIM_BASE_PATH = "/api/scim/v2.0"
# The token endpoint of a directory's OAuth client, below its SCIM endpoint (contract §4.3). Not a SCIM
# resource: scim/routes.py routes it to the token endpoint, which answers in RFC 6749's format.
SCIM_TOKEN_PATH = "/oauth/token"
# Entra ID sends RFC-conformant PATCH bodies (ops in lower case, `active` as a boolean, member removal by
# value filter) when its tenant URL carries this query flag.
ENTRA_FLAG = "aadOptscim062020"


def surface_of(path: str) -> str:
    """The surface a request path belongs to: one of SCIM, REST, ADMIN, PORTAL, SETUP, STATIC, else OTHER."""
    for prefix, surface in _PREFIXES:
        if path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] == "/"):
            return surface
    return OTHER


def scim_path(directory_id: Any) -> str:
    """The path of a directory's SCIM endpoint, e.g. `/api/scim/v2.0/<id>`."""
    return f"{SCIM_BASE_PATH}/{directory_id}"


def scim_base_url(directory_id: Any) -> str:
    """The absolute URL of a directory's SCIM endpoint (EXTERNAL_URL and `scim_path`): what resources'
    `meta.location` and discovery documents start with (RFC 7644 §3.1)."""
    return f"{settings.EXTERNAL_URL}{SCIM_BASE_PATH}/{directory_id}"


def scim_token_url(directory_id: Any) -> str:
    """The absolute URL of the token endpoint of a directory's OAuth client (contract §4.3)."""
    return scim_base_url(directory_id) + SCIM_TOKEN_PATH
