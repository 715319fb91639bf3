"""The headers of every answer under /setup/ (contract §3.1), and the check of SETUP_FRAME_ANCESTORS.

A setup page carries a secret in its URL (the link's token) and, once asked, the directory's new SCIM
secret in its body. So every answer there, errors included:

- `Cache-Control: no-store`: no browser or proxy keeps a copy of a page with a secret on it;
- `Referrer-Policy: same-origin`: the URL with its token is never sent to another site (a link the IT
  admin follows, the application's "Done" page). `no-referrer` would also hide it from Roster itself,
  and browsers then post the page's forms with `Origin: null`, which Django's CSRF check refuses;
- `X-Robots-Tag: noindex`: a link pasted somewhere public is still not indexed;
- a Content-Security-Policy that allows only Roster's own styles and script, forms posted only to
  Roster, and framing only by the origins of SETUP_FRAME_ANCESTORS (`'none'` by default), so that an
  application can embed the page in its own settings screen and no other site can (clickjacking).
  Django's clickjacking middleware would add `X-Frame-Options: DENY`, which contradicts a list of
  origins: these answers leave it out and rely on `frame-ancestors`, which every current browser
  applies in its place.

Imported by the settings (the check at start-up), so nothing here imports Django's apps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.core.exceptions import ImproperlyConfigured

from core.csp import strict_policy
from core.surfaces import SETUP, surface_of

SETUP_PREFIX = "/setup/"
NONE = "'none'"
SELF = "'self'"
# An origin as frame-ancestors takes it: a scheme, a host (its leftmost label may be `*` for any
# subdomain), an optional port; no path. `*` alone (any site) is refused: that is no protection at all.
_ORIGIN = re.compile(
    r"(?P<scheme>https?)://(?P<host>(?:\*\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
    r"|\[[0-9a-f:.]+\])(?::(?P<port>[0-9]{1,5}|\*))?/?",
)


def is_setup_path(path: str) -> bool:
    return surface_of(path) == SETUP


def frame_ancestors_check(raw: str | Iterable[str]) -> tuple[str, ...]:
    """SETUP_FRAME_ANCESTORS as the CSP's sources: `'none'` alone, or `'self'` and origins such as
    `https://app.example.com` (separated by commas or spaces); anything else stops start-up, naming the
    value. Origins come back lower-cased and without a trailing slash."""
    parts = raw.replace(",", " ").split() if isinstance(raw, str) else [p for v in raw for p in v.split()]
    if not parts:
        return (NONE,)
    sources: list[str] = []
    for part in parts:
        value = part.strip()
        lowered = value.lower()
        if lowered in (NONE, SELF):
            sources.append(lowered)
            continue
        found = _ORIGIN.fullmatch(lowered)
        if found is None or (found.group("port") not in (None, "*") and not 0 < int(found.group("port")) < 65536):
            raise ImproperlyConfigured(
                f"SETUP_FRAME_ANCESTORS: {value!r} is not an origin. Give 'none' (the default), 'self', or "
                "origins such as https://app.example.com, separated by commas."
            )
        sources.append(lowered.rstrip("/"))
    if NONE in sources and len(sources) > 1:
        raise ImproperlyConfigured("SETUP_FRAME_ANCESTORS: 'none' cannot be combined with origins.")
    return tuple(dict.fromkeys(sources))


def content_security_policy(frame_ancestors: Iterable[str]) -> str:
    # Styles and the one optional script come from Roster's static files; the script reads the status
    # part of the page from Roster only (connect-src 'self').
    return strict_policy(frame_ancestors)


def setup_headers(frame_ancestors: Iterable[str]) -> dict[str, str]:
    return {
        "Cache-Control": "no-store",
        "Referrer-Policy": "same-origin",
        "X-Robots-Tag": "noindex",
        "Content-Security-Policy": content_security_policy(frame_ancestors),
    }
