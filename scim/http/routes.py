"""The SCIM URL patterns (contract §4): the one table both entries route by.

`scim/http/urls.py` builds Django's `urlpatterns` from `PATTERNS` (mounted at `PREFIX` by config/urls.py),
and `scim/http/wsgi.py` matches paths with `scim_route`, compiled from the same strings once at import. The
view arguments are `directory_id`, `resource` and `resource_id`, the last two absent where the pattern
has no such group (the view's defaults then apply).

Each pattern matches the whole path after the prefix or nothing: Django's resolver full-matches an
endpoint regex that ends in `$`, and `scim_route` uses `fullmatch`, so the two agree on every path.
"""

from __future__ import annotations

import re

PREFIX = "/api/scim/v2.0/"

# In order; the first match wins. `[^/]+` is one path segment (as Django's `str` converter), `.+` the
# rest of the path, slashes included (as its `path` converter): a resource id is taken as sent.
PATTERNS = (
    r"(?P<directory_id>[^/]+)/?",
    r"(?P<directory_id>[^/]+)/(?P<resource>[^/]+)/?",
    r"(?P<directory_id>[^/]+)/(?P<resource>[^/]+)/(?P<resource_id>.+)",
)
_COMPILED = tuple(re.compile(pattern) for pattern in PATTERNS)


def scim_route(path: str) -> dict[str, str] | None:
    """The view arguments of a SCIM path (decoded, with its prefix), or None when no pattern matches it."""
    if not path.startswith(PREFIX):
        return None
    rest = path[len(PREFIX) :]
    for pattern in _COMPILED:
        match = pattern.fullmatch(rest)
        if match:
            return match.groupdict()
    return None
