"""Who a SCIM request is: the directory whose credential it presents (contract §4.1, §4.3): its static
SCIM secret (the current one, or the previous one while a rotation's grace lasts) unless the directory
turned it off, or an access token of its OAuth client (scim/access_tokens.py).

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
from scim.access_tokens import access_token_check
from scim.protocol.errors import ScimError
from scim.selectors import FirstRead

UNAUTHORIZED = (
    "Authentication failed. Send 'Authorization: Bearer <SCIM secret or OAuth access token of this directory>'."
)
# What the presented secret is compared with when the directory is unknown, and when it has no previous
# secret: as long as a real secret (compare_digest's time follows the expected value's length), and never
# one (fresh random values; a match counts only for a directory that exists, or a previous secret that does).
_DUMMY_SECRET = secrets.token_urlsafe(32).encode()
_DUMMY_PREVIOUS = secrets.token_urlsafe(32).encode()


class Seen:
    """What processing learnt about the directory a request names, for the HTTP entry's record of the
    request (scim.http.activity): filled in by `authenticate`, whatever it answers."""

    __slots__ = ("authenticated", "directory", "looked_up", "secret")

    def __init__(self) -> None:
        self.looked_up = False  # the URL's directory was looked for
        self.directory: Directory | None = None  # and found (also when the credential was wrong)
        self.authenticated = False  # its credential matched: a secret, an access token, the OAuth client's
        self.secret: str | None = None  # the static secret that matched, current or previous

    def __repr__(self) -> str:
        return (  # never the secret
            f"Seen(directory={self.directory!r}, looked_up={self.looked_up}, authenticated={self.authenticated})"
        )


def authenticate(
    directory_id: Any, secret: Any, *, read: FirstRead | None = None, seen: Seen | None = None
) -> Directory:
    """The directory whose credential this is: its current SCIM secret, or the previous one while a
    rotation with grace keeps it (contract §4.1), unless `scim_static_secret_enabled` is off; or an
    unexpired access token of its OAuth client (contract §4.3). Every failure is the same 401 (interop
    T1, O9).

    `read`: the request's first read, by keys taken from the URL, fetched with the directory where the
    store can (its rows are used only after this check passes). `seen`: told what was found."""
    directory = (
        storage.current().directory_with(directory_id=directory_id, read=read)
        if read
        else directory_get(directory_id=directory_id)
    )
    text = secret if isinstance(secret, str) else ""
    matched_current = matched_previous = False
    matched_token = access_token_check(text, directory)
    if matched_token is None:  # not an access token: a static secret
        matched_token = False
        presented = text.encode("utf-8", "surrogatepass") if text else b""
        current = directory.scim_secret.encode() if directory is not None else _DUMMY_SECRET
        previous = _DUMMY_PREVIOUS
        has_previous = False
        if directory is not None and directory.previous_scim_secret:
            has_previous = directory.previous_scim_secret_valid(timezone.now())
            if has_previous:
                previous = directory.previous_scim_secret.encode()
        # Both comparisons run every time, even when the directory is unknown, has no previous secret or
        # turned its static secret off, and `|` and `&` do not short-circuit: timing reveals neither which
        # directories exist nor which secret matched.
        enabled = directory is not None and directory.scim_static_secret_enabled
        matched_current = hmac.compare_digest(presented, current) & enabled
        matched_previous = hmac.compare_digest(presented, previous) & has_previous & enabled
    if seen is not None:
        seen.looked_up, seen.directory = True, directory
    if not (matched_current | matched_previous | matched_token) or directory is None or not text:
        raise ScimError(401, UNAUTHORIZED)
    scope_directory(directory.id, directory.type)  # log lines and /metrics name it from here on
    if seen is not None:
        seen.authenticated = True
        if not matched_token:
            seen.secret = directory.scim_secret if matched_current else directory.previous_scim_secret
    if directory.deactivated:
        raise ScimError(403, "This directory is deactivated; it accepts no SCIM requests.")
    return directory
