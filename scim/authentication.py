"""Who a SCIM request is: the directory whose secret it presents (contract §4.1).

`authenticate` runs before anything of a request is parsed (scim/processor.py): until it has passed, a
request costs the directory's lookup and what its URL names (its first read), nothing else.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from django.utils import timezone

from core.requestid import scope_directory
from directories.models import Directory
from directories.selectors import directory_get
from scim import storage
from scim.protocol.errors import ScimError
from scim.selectors import FirstRead

UNAUTHORIZED = "Authentication failed. Send 'Authorization: Bearer <SCIM secret of this directory>'."
# What the presented secret is compared with when the directory is unknown, and when it has no previous
# secret: as long as a real secret (compare_digest's time follows the expected value's length), and never
# one (fresh random values; a match counts only for a directory that exists, or a previous secret that does).
_DUMMY_SECRET = secrets.token_urlsafe(32).encode()
_DUMMY_PREVIOUS = secrets.token_urlsafe(32).encode()


class Seen:
    """What processing learnt about the directory a request names, for the HTTP entry's record of the
    request (scim.http.activity): filled in by `authenticate`, whatever it answers."""

    __slots__ = ("directory", "looked_up", "secret")

    def __init__(self) -> None:
        self.looked_up = False  # the URL's directory was looked for
        self.directory: Directory | None = None  # and found (also when the secret was wrong)
        self.secret: str | None = None  # the secret that matched, current or previous

    def __repr__(self) -> str:
        return f"Seen(directory={self.directory!r}, looked_up={self.looked_up})"  # never the secret


def authenticate(
    directory_id: Any, secret: Any, *, read: FirstRead | None = None, seen: Seen | None = None
) -> Directory:
    """The directory whose SCIM secret this is: its current secret, or the previous one while a rotation
    with grace keeps it (contract §4.1). Every failure is the same 401 (interop T1, O9).

    `read`: the request's first read, by keys taken from the URL, fetched with the directory where the
    store can (its rows are used only after this check passes). `seen`: told what was found."""
    directory = (
        storage.current().directory_with(directory_id=directory_id, read=read)
        if read
        else directory_get(directory_id=directory_id)
    )
    presented = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) and secret else b""
    current = directory.scim_secret.encode() if directory is not None else _DUMMY_SECRET
    previous = _DUMMY_PREVIOUS
    has_previous = False
    if directory is not None and directory.previous_scim_secret:
        has_previous = directory.previous_scim_secret_valid(timezone.now())
        if has_previous:
            previous = directory.previous_scim_secret.encode()
    # Both comparisons run every time, even when the directory is unknown or has no previous secret, and
    # `|` and `&` do not short-circuit: timing reveals neither which directories exist nor which secret matched.
    matched_current = hmac.compare_digest(presented, current)
    matched_previous = hmac.compare_digest(presented, previous) & has_previous
    if seen is not None:
        seen.looked_up, seen.directory = True, directory
    if not (matched_current | matched_previous) or directory is None or not presented:
        raise ScimError(401, UNAUTHORIZED)
    scope_directory(directory.id, directory.type)  # log lines and /metrics name it from here on
    if seen is not None:
        seen.secret = directory.scim_secret if matched_current else directory.previous_scim_secret
    if directory.deactivated:
        raise ScimError(403, "This directory is deactivated; it accepts no SCIM requests.")
    return directory
