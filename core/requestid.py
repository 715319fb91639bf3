"""Request ids: the one id that ties a response to its log lines.

An incoming `X-Request-Id` (set by a load balancer or the client) is kept when it is 1-128 characters
of letters, digits, `-`, `_` and `.`; anything else (too long, odd characters that could forge a log
line) is replaced by a new id.
"""

from __future__ import annotations

import re
import uuid

HEADER = "X-Request-Id"
ENVIRON_KEY = "HTTP_X_REQUEST_ID"
_SANE = re.compile(r"[A-Za-z0-9._-]{1,128}")


def request_id_new() -> str:
    return uuid.uuid4().hex


def request_id_from(incoming: str | None) -> str:
    """The incoming id when it is sane, else a new one."""
    if incoming and _SANE.fullmatch(incoming):
        return incoming
    return request_id_new()
