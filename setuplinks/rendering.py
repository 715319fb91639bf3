"""The JSON shape of a setup link (contract §3.1), shared by the REST API and the admin API. The token is
never part of it: only the answer that creates a link carries its `url`, once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from core.timefmt import iso_utc, iso_utc_or_none
from setuplinks.headers import SETUP_PREFIX
from setuplinks.models import SetupLink


def setup_link_url(token: str) -> str:
    return settings.EXTERNAL_URL + SETUP_PREFIX + token


def setup_link_data(link: SetupLink, *, now: datetime | None = None, token: str | None = None) -> dict[str, Any]:
    """A link; with `token` (only when it was just created) also its `url`."""
    data: dict[str, Any] = {"id": str(link.id)}
    if token is not None:
        data["url"] = setup_link_url(token)
    data.update(
        {
            "status": link.status_at(now or timezone.now()),
            "created_at": iso_utc(link.created_at),
            "expires_at": iso_utc(link.expires_at),
            "created_by": link.created_by,
            "revoked_at": iso_utc_or_none(link.revoked_at),
            "last_opened_at": iso_utc_or_none(link.last_opened_at),
            "opened_count": link.opened_count,
            "return_url": link.return_url or None,
            "allow_mapping": link.allow_mapping,
        }
    )
    return data
