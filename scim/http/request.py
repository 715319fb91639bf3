"""What the HTTP adapters read of a request before it becomes SCIM's own (scim.request.ScimRequest): its
Content-Length, as both entries (scim.http.wsgi and Django's view, scim.http.views) and the token endpoint's
adapter check it before reading a body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["content_length"]


def content_length(environ: Mapping[str, Any]) -> int:
    """The request's Content-Length as Django's WSGIRequest reads it: 0 when missing or not a number."""
    try:
        return int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
