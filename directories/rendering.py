"""The public shapes of contract §3 (Directory, User, Group), shared by the REST API, webhooks and admin API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from core.timefmt import iso_utc_or_none
from directories.activity.rendering import health_data, health_row, scim_secret_data
from directories.models import Directory, DirectoryGroup, DirectoryType, DirectoryUser


def scim_path(directory: Directory) -> str:
    return f"/api/scim/v2.0/{directory.id}"


def scim_endpoint(directory: Directory) -> str:
    endpoint = settings.EXTERNAL_URL + scim_path(directory)
    if directory.type == DirectoryType.AZURE:
        # Entra ID switches to RFC-conformant PATCH bodies when it sees this flag in the tenant URL.
        endpoint += "?aadOptscim062020"
    return endpoint


def directory_data(directory: Directory, *, now: datetime | None = None) -> dict[str, Any]:
    data = {
        "id": str(directory.id),
        "name": directory.name,
        "tenant": directory.tenant,
        "product": directory.product,
        "type": directory.type,
        "log_webhook_events": directory.log_webhook_events,
        "deactivated": directory.deactivated,
        "scim": {
            "path": scim_path(directory),
            "secret": directory.scim_secret,
            "endpoint": scim_endpoint(directory),
        },
        "webhook": {"endpoint": directory.webhook_url or None, "secret": directory.webhook_secret or None},
        "created_at": iso_utc_or_none(directory.created_at),
    }
    _scim_activity_add(data, directory, now or timezone.now())
    return data


def _scim_activity_add(data: dict[str, Any], directory: Directory, now: datetime) -> None:
    """Contract §4.1: the request-log switch, the secrets' expiry and last uses, and `health`."""
    health = health_row(directory)
    data["log_scim_requests"] = directory.log_scim_requests
    data["scim"].update(scim_secret_data(directory, health, now))
    data["health"] = health_data(directory, health, now)


def directory_public_data(directory: Directory, *, now: datetime | None = None) -> dict[str, Any]:
    """The directory as sent in dsync.* events: without its SCIM and webhook secrets."""
    data = directory_data(directory, now=now)
    data["scim"] = {k: v for k, v in data["scim"].items() if k != "secret"}
    data["webhook"] = {"endpoint": data["webhook"]["endpoint"]}
    return data


def user_data(user: DirectoryUser) -> dict[str, Any]:
    return {
        "id": str(user.id),
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "active": user.active,
        "raw": user.raw,
    }


def group_data(group: DirectoryGroup) -> dict[str, Any]:
    return {"id": str(group.id), "name": group.display_name, "raw": group.raw}
