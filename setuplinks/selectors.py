"""Reads of setup links, always scoped by directory, and what the setup page shows of its directory.

A link is found by its token's digest alone (the token names one directory). Nothing here is cached: each
read sees every revocation and expiry committed on any node.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from core.crypto import secret_digest
from directories.activity import recorder
from directories.activity.rendering import health_state_of
from directories.activity.selectors import scim_log_list
from directories.models import Directory, ScimHealth, ScimLogEntry
from directories.selectors import directory_groups, directory_users
from setuplinks.models import SetupLink

# What a token looks like: url-safe base64 (secrets.token_urlsafe). Anything else is not looked up.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,128}")
# The entries of the SCIM request log the page lists.
LOG_LINES = 10


def setup_link_list(*, directory: Directory) -> QuerySet[SetupLink]:
    """The directory's links, newest first."""
    return SetupLink.objects.filter(directory=directory).order_by("-created_at", "-id")


def setup_link_get(*, directory: Directory, link_id: Any) -> SetupLink | None:
    """One link of this directory; None for an unknown id, a malformed one, or another directory's."""
    try:
        pk = uuid.UUID(str(link_id))
    except (ValueError, TypeError, AttributeError):
        return None
    link = SetupLink.objects.filter(directory=directory, pk=pk).first()
    if link is not None:
        link.directory = directory
    return link


def setup_link_by_token(*, token: str) -> SetupLink | None:
    """The link whose token this is, with its directory (and the directory's health row); None when no
    link has it or it is not shaped like one. Its status is the caller's to check."""
    if not _TOKEN.fullmatch(token):
        return None
    return (
        SetupLink.objects.select_related("directory", "directory__scim_health")
        .filter(token_hash=secret_digest(token))
        .first()
    )


@dataclass(frozen=True)
class SetupStatus:
    """The connection as the setup page shows it: health state, counts, the last request, the log."""

    state: str
    user_count: int
    group_count: int
    last_request_at: datetime | None
    log: list[ScimLogEntry]
    health: ScimHealth | None


def setup_status(*, directory: Directory) -> SetupStatus:
    """The directory's connection now. This web process's own SCIM activity is written first (what its
    background thread does every few seconds), so a push the IT admin just made through this process
    shows on the next reload; another process's shows once that process has written it."""
    recorder.flush()
    health = ScimHealth.objects.filter(directory=directory).first()
    entries = list(scim_log_list(directory=directory).only("at", "method", "path", "status", "detail")[:LOG_LINES])
    return SetupStatus(
        state=str(health_state_of(directory, health)),
        user_count=directory_users(directory=directory).count(),
        group_count=directory_groups(directory=directory).count(),
        last_request_at=health.last_request_at if health is not None else None,
        log=entries,
        health=health,
    )
