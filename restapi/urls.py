"""REST routes (contract §3). `/api/v1/dsync/…` is an alias of `/api/v1/directory-sync/…`.

Order matters: `users` and `groups` come before `<directory_id>`, or they would be read as an id.
`<directory_id>/users` and `<directory_id>/groups` are one directory's users and groups (restapi.users_groups).
`<directory_id>/events` is the delivery log (restapi.deliveries); `<directory_id>/scim-requests` the SCIM
request log (restapi.scim_requests), `<directory_id>/scim-secret` its rotation, `<directory_id>/scim-oauth-secret`
the OAuth client secret of the SCIM endpoint (contract §4.3) and `…/scim-oauth-secrets` its several secrets,
`<directory_id>/changes` the changes feed (restapi.changes), `<directory_id>/changes/resend` one more attempt
of chosen events (restapi.resends), `<directory_id>/setup-links` the directory's setup links (restapi.setup_links),
`<directory_id>/held-changes` the changes its deprovision guard holds (restapi.held_changes), and
`<directory_id>/history/…` and `<directory_id>/diff` its history (restapi.history).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import path

from restapi import apis, users_groups
from restapi.changes import DirectoryChangesApi
from restapi.deliveries import DirectoryEventsApi
from restapi.held_changes import HeldChangesApi, HeldChangesApproveApi, HeldChangesDiscardApi
from restapi.history import HistoryDiffApi, HistoryGroupMembersApi, HistoryGroupsApi, HistoryUsersApi
from restapi.resends import ChangesResendApi
from restapi.scim_requests import DirectoryScimRequestsApi
from restapi.setup_links import SetupLinkApi, SetupLinksApi
from restapi.webhook_endpoints import (
    WebhookEndpointApi,
    WebhookEndpointDeliveriesApi,
    WebhookEndpointsApi,
    WebhookEndpointSecretApi,
    WebhookEndpointTestApi,
)


class SchemaRoute:
    """GET /api/v1/schema: restapi.openapi.RestSchemaView, imported at the document's first request.

    The view module brings drf-spectacular's generator and renderers, and they bring django.test, unittest
    and PyYAML: about 2 MB of PSS in every web worker for a route it rarely serves (with
    restapi.openapi_marks; bench/README.md, "Code kept for speed"). `cls` and `initkwargs` (DRF) and
    `view_class` and `view_initkwargs` (Django) are what `as_view()` puts on a view, so the document's
    generator and anything else that looks at the route see the view class, imported when asked for.
    """

    csrf_exempt = True
    initkwargs: dict[str, Any] = {}
    view_initkwargs: dict[str, Any] = {}

    @property
    def cls(self) -> type:
        from restapi.openapi import RestSchemaView

        return RestSchemaView

    view_class = cls

    @cached_property
    def view(self) -> Callable[..., HttpResponseBase]:
        return self.cls.as_view()

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.view(request, *args, **kwargs)


def _routes(prefix: str, suffix: str) -> list:
    return [
        path(prefix, apis.DirectoryListCreateApi.as_view(), name=f"directory-list{suffix}"),
        path(f"{prefix}/users", users_groups.UserListApi.as_view(), name=f"user-list{suffix}"),
        path(f"{prefix}/users/<str:user_id>", users_groups.UserDetailApi.as_view(), name=f"user-detail{suffix}"),
        path(f"{prefix}/users/<str:user_id>/groups", users_groups.UserGroupsApi.as_view(), name=f"user-groups{suffix}"),
        path(f"{prefix}/groups", users_groups.GroupListApi.as_view(), name=f"group-list{suffix}"),
        path(f"{prefix}/groups/<str:group_id>", users_groups.GroupDetailApi.as_view(), name=f"group-detail{suffix}"),
        path(f"{prefix}/<str:directory_id>", apis.DirectoryDetailApi.as_view(), name=f"directory-detail{suffix}"),
        # One directory's users and groups, by its id (no tenant or product needed).
        path(
            f"{prefix}/<str:directory_id>/users",
            users_groups.DirectoryUsersApi.as_view(),
            name=f"directory-users{suffix}",
        ),
        path(
            f"{prefix}/<str:directory_id>/groups",
            users_groups.DirectoryGroupsApi.as_view(),
            name=f"directory-groups{suffix}",
        ),
    ]


urlpatterns = [
    *_routes("api/v1/directory-sync", ""),
    *_routes("api/v1/dsync", "-dsync"),
    path("api/v1/schema", SchemaRoute(), name="rest-schema"),
    path("api/v1/directory-sync/<str:directory_id>/events", DirectoryEventsApi.as_view(), name="directory-events"),
    path("api/v1/dsync/<str:directory_id>/events", DirectoryEventsApi.as_view(), name="dsync-directory-events"),
]


def _scim_connection_routes(prefix: str, suffix: str) -> list:
    """The SCIM connection of a directory (contract §4.1, §4.3): its secret's rotation, its request log and
    its OAuth client's secret."""
    return [
        path(f"{prefix}/<str:directory_id>/scim-secret", apis.ScimSecretApi.as_view(), name=f"scim-secret{suffix}"),
        path(
            f"{prefix}/<str:directory_id>/scim-secret/previous",
            apis.PreviousScimSecretApi.as_view(),
            name=f"scim-secret-previous{suffix}",
        ),
        path(
            f"{prefix}/<str:directory_id>/scim-requests",
            DirectoryScimRequestsApi.as_view(),
            name=f"scim-requests{suffix}",
        ),
        path(
            f"{prefix}/<str:directory_id>/scim-oauth-secret",
            apis.ScimOAuthSecretApi.as_view(),
            name=f"scim-oauth-secret{suffix}",
        ),
        path(
            f"{prefix}/<str:directory_id>/scim-oauth-secrets",
            apis.ScimOAuthSecretsApi.as_view(),
            name=f"scim-oauth-secrets{suffix}",
        ),
        path(
            f"{prefix}/<str:directory_id>/scim-oauth-secrets/<str:secret_id>",
            apis.ScimOAuthSecretsItemApi.as_view(),
            name=f"scim-oauth-secret-item{suffix}",
        ),
    ]


urlpatterns += [
    *_scim_connection_routes("api/v1/directory-sync", ""),
    *_scim_connection_routes("api/v1/dsync", "-dsync"),
]


def _feed_routes(prefix: str, suffix: str) -> list:
    """A directory's changes feed (contract §5.1), and resending events on request."""
    return [
        path(f"{prefix}/<str:directory_id>/changes", DirectoryChangesApi.as_view(), name=f"directory-changes{suffix}"),
        path(
            f"{prefix}/<str:directory_id>/changes/resend",
            ChangesResendApi.as_view(),
            name=f"changes-resend{suffix}",
        ),
    ]


def _history_routes(prefix: str, suffix: str) -> list:
    """A directory's history (contract §5.3): users, groups and a group's members at a point; the diff."""
    base = f"{prefix}/<str:directory_id>"
    return [
        path(f"{base}/history/users", HistoryUsersApi.as_view(), name=f"history-users{suffix}"),
        path(f"{base}/history/groups", HistoryGroupsApi.as_view(), name=f"history-groups{suffix}"),
        path(
            f"{base}/history/groups/<str:group_id>/members",
            HistoryGroupMembersApi.as_view(),
            name=f"history-group-members{suffix}",
        ),
        path(f"{base}/diff", HistoryDiffApi.as_view(), name=f"history-diff{suffix}"),
    ]


urlpatterns += [
    *_history_routes("api/v1/directory-sync", ""),
    *_history_routes("api/v1/dsync", "-dsync"),
    *_feed_routes("api/v1/directory-sync", ""),
    *_feed_routes("api/v1/dsync", "-dsync"),
]


def _setup_link_routes(prefix: str, suffix: str) -> list:
    """A directory's setup links (contract §3.1): create and list, and revoke one."""
    return [
        path(f"{prefix}/<str:directory_id>/setup-links", SetupLinksApi.as_view(), name=f"setup-links{suffix}"),
        path(
            f"{prefix}/<str:directory_id>/setup-links/<str:link_id>",
            SetupLinkApi.as_view(),
            name=f"setup-link{suffix}",
        ),
    ]


urlpatterns += [
    *_setup_link_routes("api/v1/directory-sync", ""),
    *_setup_link_routes("api/v1/dsync", "-dsync"),
]


def _held_routes(prefix: str, suffix: str) -> list:
    """The changes a directory's deprovision guard holds (contract §4.2): list, approve, discard."""
    held = f"{prefix}/<str:directory_id>/held-changes"
    return [
        path(held, HeldChangesApi.as_view(), name=f"held-changes{suffix}"),
        path(f"{held}/approve", HeldChangesApproveApi.as_view(), name=f"held-changes-approve{suffix}"),
        path(f"{held}/discard", HeldChangesDiscardApi.as_view(), name=f"held-changes-discard{suffix}"),
    ]


urlpatterns += [
    *_held_routes("api/v1/directory-sync", ""),
    *_held_routes("api/v1/dsync", "-dsync"),
]

# Webhook endpoints (contract §5.2): not under a directory, since one may take every directory's events.
urlpatterns += [
    path("api/v1/webhook-endpoints", WebhookEndpointsApi.as_view(), name="webhook-endpoints"),
    path("api/v1/webhook-endpoints/<str:endpoint_id>", WebhookEndpointApi.as_view(), name="webhook-endpoint"),
    path(
        "api/v1/webhook-endpoints/<str:endpoint_id>/secret",
        WebhookEndpointSecretApi.as_view(),
        name="webhook-endpoint-secret",
    ),
    path(
        "api/v1/webhook-endpoints/<str:endpoint_id>/test",
        WebhookEndpointTestApi.as_view(),
        name="webhook-endpoint-test",
    ),
    path(
        "api/v1/webhook-endpoints/<str:endpoint_id>/deliveries",
        WebhookEndpointDeliveriesApi.as_view(),
        name="webhook-endpoint-deliveries",
    ),
]
