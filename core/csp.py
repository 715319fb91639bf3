"""The Content-Security-Policy of Roster's own pages (the portal, the setup page): only Roster's own
styles and scripts (static files, never inline), forms posted only to Roster, no `<base>`, framing only by
`frame_ancestors`. `data:` images: the favicon placeholder the pages link."""

from __future__ import annotations

from collections.abc import Iterable


def strict_policy(frame_ancestors: Iterable[str]) -> str:
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        f"form-action 'self'; base-uri 'none'; frame-ancestors {' '.join(frame_ancestors)}"
    )
