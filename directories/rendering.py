"""The public shapes of contract §3 (Directory, User, Group), shared by the REST API, webhooks and admin API."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings

from core.timefmt import iso_utc_or_none
from directories.models import Directory, DirectoryGroup, DirectoryType, DirectoryUser


def scim_path(directory: Directory) -> str:
    return f"/api/scim/v2.0/{directory.id}"


def scim_endpoint(directory: Directory) -> str:
    endpoint = settings.EXTERNAL_URL + scim_path(directory)
    if directory.type == DirectoryType.AZURE:
        # Entra ID switches to RFC-conformant PATCH bodies when it sees this flag in the tenant URL.
        endpoint += "?aadOptscim062020"
    return endpoint


def directory_data(directory: Directory) -> dict[str, Any]:
    return {
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


def group_with_members_data(group: DirectoryGroup, member_ids: Iterable[Any]) -> dict[str, Any]:
    """A Group with `members: [{group_id, user_id}]`: the REST group detail, and each group of an export."""
    data = group_data(group)
    data["members"] = [{"group_id": data["id"], "user_id": str(user_id)} for user_id in member_ids]
    return data
