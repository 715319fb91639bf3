"""`Roster`: the client, and its directories, users and groups (setup links and held changes: directory_admin.py).

Every method is one request (lists: one per page, as they are read), through the one transport
(`_http.py`: the API key, errors, retries on 429/503). Results are the dataclasses generated from Roster's
OpenAPI document (`_generated/models.py`). A new namespace follows the same pattern: a class holding the
transport, methods that call one route each and build its result type, and one attribute on `Roster`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Callable, Optional, Union

import httpx

from roster_client._generated.models import (
    Delivery,
    Directory,
    Group,
    GroupDetail,
    NewScimOAuthSecret,
    ScimOAuthSecret,
    ScimRequest,
    User,
)
from roster_client._http import Namespace, Transport, segment
from roster_client.changes import Changes
from roster_client.directory_admin import HeldChanges, SetupLinks
from roster_client.history import History
from roster_client.paging import Paged, paged
from roster_client.webhook_endpoints import WebhookEndpoints

BASE = "/api/v1/directory-sync"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # "leave as it is", where None means "clear" (directories.update)


def _given(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not UNSET}


class Directories(Namespace):
    def create(
        self,
        *,
        tenant: str,
        product: str,
        name: Optional[str] = None,
        type: Optional[str] = None,  # noqa: A002 - the field's name in Roster's API
        webhook_url: Optional[str] = None,
        webhook_secret: Optional[str] = None,
        log_webhook_events: Optional[bool] = None,
        log_scim_requests: Optional[bool] = None,
        scim_rate_limit: Optional[int] = None,
        webhook_format: Optional[str] = None,
    ) -> Directory:
        """A new directory, with its SCIM endpoint and secret (None: Roster's default for that field;
        `scim_rate_limit`: SCIM requests per minute, 1500 to 600000, 0 for no limit)."""
        fields = {
            "tenant": tenant,
            "product": product,
            "name": name,
            "type": type,
            "webhook_url": webhook_url,
            "webhook_secret": webhook_secret,
            "log_webhook_events": log_webhook_events,
            "log_scim_requests": log_scim_requests,
            "scim_rate_limit": scim_rate_limit,
            "webhook_format": webhook_format,
        }
        body = {key: value for key, value in fields.items() if value is not None}
        return Directory.from_dict(self._t.call("POST", BASE, body=body).body["data"])

    def get(self, directory_id: str) -> Directory:
        return Directory.from_dict(self._t.call("GET", f"{BASE}/{segment(directory_id)}").body["data"])

    def list(self, *, tenant: str, product: str, page_limit: int = 100) -> Paged[Directory]:
        """The tenant and product's directories, oldest first, every page."""
        return paged(self._t, BASE, Directory, {"tenant": tenant, "product": product}, page_limit)

    def update(
        self,
        directory_id: str,
        *,
        name: Any = UNSET,
        webhook_url: Any = UNSET,
        webhook_secret: Any = UNSET,
        log_webhook_events: Any = UNSET,
        log_scim_requests: Any = UNSET,
        deactivated: Any = UNSET,
        attribute_map: Any = UNSET,
        role_map: Any = UNSET,
        deprovision_guard: Any = UNSET,
        static_secret_enabled: Any = UNSET,
        scim_rate_limit: Any = UNSET,
        webhook_format: Any = UNSET,
    ) -> Directory:
        """Change the given fields only. `webhook_url=None` removes the webhook; `attribute_map=None` or `{}`
        clears the map (a map given replaces the whole map). `deprovision_guard` is merged into the current
        setting (e.g. `{"max_users": 25}`); `static_secret_enabled=False` leaves OAuth access tokens as the
        only way into the SCIM endpoint (a ConflictError while OAuth has no client secret). `scim_rate_limit`:
        SCIM requests per minute, 1500 to 600000, 0 for no limit, None for the deployment's SCIM_RATE_LIMIT."""
        body = _given(
            {
                "name": name,
                "webhook_url": webhook_url,
                "webhook_secret": webhook_secret,
                "log_webhook_events": log_webhook_events,
                "log_scim_requests": log_scim_requests,
                "deactivated": deactivated,
                "attribute_map": attribute_map,
                "role_map": role_map,
                "deprovision_guard": deprovision_guard,
                "static_secret_enabled": static_secret_enabled,
                "scim_rate_limit": scim_rate_limit,
                "webhook_format": webhook_format,
            }
        )
        answer = self._t.call("PATCH", f"{BASE}/{segment(directory_id)}", body=body)
        return Directory.from_dict(answer.body["data"])

    def delete(self, directory_id: str) -> None:
        """Delete the directory with its users, groups and logs."""
        self._t.call("DELETE", f"{BASE}/{segment(directory_id)}")

    def rotate_scim_secret(self, directory_id: str, *, grace_seconds: int = 0) -> Directory:
        """A new SCIM secret (in the answer's `scim.secret`); the previous one keeps working `grace_seconds`."""
        answer = self._t.call(
            "POST", f"{BASE}/{segment(directory_id)}/scim-secret", body={"grace_seconds": grace_seconds}
        )
        return Directory.from_dict(answer.body["data"])

    def revoke_previous_scim_secret(self, directory_id: str) -> Directory:
        """End the grace a rotation gave the previous SCIM secret, now."""
        answer = self._t.call("DELETE", f"{BASE}/{segment(directory_id)}/scim-secret/previous")
        return Directory.from_dict(answer.body["data"])

    def rotate_scim_oauth_secret(self, directory_id: str) -> Directory:
        """A new OAuth client secret for the SCIM endpoint (in the answer's `scim.oauth.client_secret`, only
        there); access tokens issued with the previous one stop working at once."""
        answer = self._t.call("POST", f"{BASE}/{segment(directory_id)}/scim-oauth-secret")
        return Directory.from_dict(answer.body["data"])

    def scim_oauth_secrets(self, directory_id: str) -> list[ScimOAuthSecret]:
        """The OAuth client secrets of the SCIM endpoint, newest first (expired ones too), never their value."""
        answer = self._t.call("GET", f"{BASE}/{segment(directory_id)}/scim-oauth-secrets")
        return [ScimOAuthSecret.from_dict(item) for item in answer.body["data"]]

    def add_scim_oauth_secret(self, directory_id: str, *, expires_in_days: Optional[int] = None) -> NewScimOAuthSecret:
        """Another OAuth client secret (its `client_secret` in this answer only), working `expires_in_days` days
        (None: Roster's default, 365); the others keep working. A ConflictError past 5 unexpired secrets."""
        body = {} if expires_in_days is None else {"expires_in_days": expires_in_days}
        answer = self._t.call("POST", f"{BASE}/{segment(directory_id)}/scim-oauth-secrets", body=body)
        return NewScimOAuthSecret.from_dict(answer.body["data"])

    def revoke_scim_oauth_secret(self, directory_id: str, secret_id: str) -> None:
        """The secret, and the access tokens it obtained, stop working at once; the other secrets' do not."""
        self._t.call("DELETE", f"{BASE}/{segment(directory_id)}/scim-oauth-secrets/{segment(secret_id)}")

    def deliveries(
        self, directory_id: str, *, failed: Optional[bool] = None, status: Optional[str] = None, page_limit: int = 100
    ) -> Paged[Delivery]:
        """The webhook delivery log (kept while `log_webhook_events` is on), oldest first."""
        params = {"failed": failed, "status": status}
        return paged(self._t, f"{BASE}/{segment(directory_id)}/events", Delivery, params, page_limit)

    def scim_requests(
        self, directory_id: str, *, failed: Optional[bool] = None, status: Optional[int] = None, page_limit: int = 100
    ) -> Paged[ScimRequest]:
        """The SCIM request log, newest first."""
        params = {"failed": failed, "status": status}
        return paged(self._t, f"{BASE}/{segment(directory_id)}/scim-requests", ScimRequest, params, page_limit)

    def users(
        self,
        directory_id: str,
        *,
        active: Optional[bool] = None,
        email: Optional[str] = None,
        group: Optional[str] = None,
        updated_after: Union[str, datetime, None] = None,
        page_limit: int = 100,
    ) -> Paged[User]:
        """The directory's users, oldest first, every page, fetched lazily; the filters of `users.list`."""
        params = {"active": active, "email": email, "group": group, "updatedAfter": updated_after}
        return paged(self._t, f"{BASE}/{segment(directory_id)}/users", User, params, page_limit)

    def groups(self, directory_id: str, *, name: Optional[str] = None, page_limit: int = 100) -> Paged[Group]:
        """The directory's groups, oldest first, without members."""
        return paged(self._t, f"{BASE}/{segment(directory_id)}/groups", Group, {"name": name}, page_limit)


class Users(Namespace):
    def list(
        self,
        *,
        tenant: str,
        product: str,
        directory_id: Optional[str] = None,
        active: Optional[bool] = None,
        email: Optional[str] = None,
        group: Optional[str] = None,
        updated_after: Union[str, datetime, None] = None,
        page_limit: int = 100,
    ) -> Paged[User]:
        """The tenant and product's users (or one directory's), oldest first, every page, fetched lazily.
        `updated_after` is strictly after, at the millisecond Roster shows: the newest `updated_at` seen
        can be passed back as is."""
        params = {
            "tenant": tenant,
            "product": product,
            "directoryId": directory_id,
            "active": active,
            "email": email,
            "group": group,
            "updatedAfter": updated_after,
        }
        return paged(self._t, f"{BASE}/users", User, params, page_limit)

    def get(self, user_id: str, *, tenant: str, product: str) -> User:
        params = {"tenant": tenant, "product": product}
        return User.from_dict(self._t.call("GET", f"{BASE}/users/{segment(user_id)}", params=params).body["data"])

    def groups(self, user_id: str, *, tenant: str, product: str, page_limit: int = 100) -> Paged[Group]:
        """The groups the user is a member of (without members), oldest first."""
        params = {"tenant": tenant, "product": product}
        return paged(self._t, f"{BASE}/users/{segment(user_id)}/groups", Group, params, page_limit)


class Groups(Namespace):
    def list(
        self,
        *,
        tenant: str,
        product: str,
        directory_id: Optional[str] = None,
        name: Optional[str] = None,
        page_limit: int = 100,
    ) -> Paged[Group]:
        """The tenant and product's groups (or one directory's), oldest first, without members."""
        params = {"tenant": tenant, "product": product, "directoryId": directory_id, "name": name}
        return paged(self._t, f"{BASE}/groups", Group, params, page_limit)

    def get(self, group_id: str, *, tenant: str, product: str) -> GroupDetail:
        """The group with its `members`."""
        params = {"tenant": tenant, "product": product}
        answer = self._t.call("GET", f"{BASE}/groups/{segment(group_id)}", params=params)
        return GroupDetail.from_dict(answer.body["data"])


class Roster:
    """A client of one Roster.

        roster = Roster(base_url="https://roster.example.com", api_key="...")  # or ROSTER_URL, ROSTER_API_KEY

    `max_retries` bounds the retries of a request answered 429 or 503 (each waits what Retry-After says, at
    most `max_retry_wait` seconds); `http_client` is an httpx.Client of your own (proxies, TLS, a mock
    transport in tests), `sleep` what waits between retries and feed polls.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        http_client: Optional[httpx.Client] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._transport = Transport(
            base_url=base_url or os.environ.get("ROSTER_URL") or "",
            api_key=api_key or os.environ.get("ROSTER_API_KEY") or "",
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            http_client=http_client,
            sleep=sleep,
        )
        self.directories = Directories(self._transport)
        self.users = Users(self._transport)
        self.groups = Groups(self._transport)
        self.changes = Changes(self._transport, sleep=sleep)
        self.setup_links = SetupLinks(self._transport)
        self.held_changes = HeldChanges(self._transport)
        self.history = History(self._transport)
        self.webhook_endpoints = WebhookEndpoints(self._transport)

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def close(self) -> None:
        """Close the connections (not those of an http_client you passed)."""
        self._transport.close()

    def __enter__(self) -> Roster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
