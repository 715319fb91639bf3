"""Portal routes, under /portal/ (config.urls). Ids are matched as strings so that a malformed id
gets the portal's own 404 page, like an unknown one."""

from __future__ import annotations

from django.urls import path

from portal.views import (
    audit,
    auth,
    deliveries,
    directories,
    held_changes,
    history,
    mapping,
    people,
    scim_requests,
    setup_links,
    webhook_endpoints,
)

app_name = "portal"

urlpatterns = [
    path("login", auth.signin, name="login"),
    path("logout", auth.signout, name="logout"),
    path("", directories.directory_list, name="directories"),
    # Webhook endpoints (contract §5.2).
    path("webhook-endpoints", webhook_endpoints.endpoint_list_view, name="webhook_endpoints"),
    path("webhook-endpoints/new", webhook_endpoints.endpoint_create_view, name="webhook_endpoint_create"),
    path("webhook-endpoints/<str:endpoint_id>", webhook_endpoints.endpoint_detail_view, name="webhook_endpoint"),
    path(
        "webhook-endpoints/<str:endpoint_id>/enabled",
        webhook_endpoints.endpoint_enabled_view,
        name="webhook_endpoint_enabled",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/secret",
        webhook_endpoints.endpoint_rotate_view,
        name="webhook_endpoint_secret",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/test", webhook_endpoints.endpoint_test_view, name="webhook_endpoint_test"
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/delete",
        webhook_endpoints.endpoint_delete_view,
        name="webhook_endpoint_delete",
    ),
    path("directories/new", directories.directory_create, name="directory_create"),
    path("directories/<str:directory_id>", directories.directory_detail, name="directory"),
    path("directories/<str:directory_id>/edit", directories.directory_edit, name="directory_edit"),
    path("directories/<str:directory_id>/mapping", mapping.directory_mapping, name="directory_mapping"),
    path("directories/<str:directory_id>/logging", directories.directory_logging_set, name="directory_logging"),
    path("directories/<str:directory_id>/active", directories.directory_active_set, name="directory_active"),
    path(
        "directories/<str:directory_id>/scim-secret",
        directories.directory_scim_secret_rotate,
        name="directory_scim_secret",
    ),
    # OAuth client credentials for SCIM (contract §4.3): the client secret, and the static secret's switch.
    path(
        "directories/<str:directory_id>/scim-oauth-secret",
        directories.directory_scim_oauth_secret_rotate,
        name="directory_scim_oauth_secret",
    ),
    path(
        "directories/<str:directory_id>/scim-oauth-secrets",
        directories.directory_scim_oauth_secret_add,
        name="directory_scim_oauth_secret_add",
    ),
    path(
        "directories/<str:directory_id>/scim-oauth-secrets/<str:secret_id>/revoke",
        directories.directory_scim_oauth_secret_revoke,
        name="directory_scim_oauth_secret_revoke",
    ),
    path(
        "directories/<str:directory_id>/scim-static-secret",
        directories.directory_scim_static_secret_set,
        name="directory_scim_static_secret",
    ),
    path(
        "directories/<str:directory_id>/webhook-secret",
        directories.directory_webhook_secret_rotate,
        name="directory_webhook_secret",
    ),
    path("directories/<str:directory_id>/delete", directories.directory_delete, name="directory_delete"),
    path("directories/<str:directory_id>/history", history.history_page, name="history"),
    path("directories/<str:directory_id>/history.csv", history.history_csv, name="history_csv"),
    path("directories/<str:directory_id>/users", people.user_list, name="users"),
    path("directories/<str:directory_id>/users/<str:user_id>", people.user_detail, name="user"),
    path("directories/<str:directory_id>/groups", people.group_list, name="groups"),
    path("directories/<str:directory_id>/groups/<str:group_id>", people.group_detail, name="group"),
    path("directories/<str:directory_id>/deliveries", deliveries.delivery_list, name="deliveries"),
    path("directories/<str:directory_id>/deliveries/<str:delivery_id>", deliveries.delivery_detail, name="delivery"),
    path("directories/<str:directory_id>/changes/resend", deliveries.changes_resend, name="changes_resend"),
    path("audit", audit.audit_list, name="audit"),
    # SCIM activity (contract §4.1): the request log, its switch, and the previous secret of a rotation.
    path("directories/<str:directory_id>/scim-requests", scim_requests.scim_request_list, name="scim_requests"),
    path(
        "directories/<str:directory_id>/scim-requests/<str:entry_id>",
        scim_requests.scim_request_detail,
        name="scim_request",
    ),
    path(
        "directories/<str:directory_id>/scim-logging",
        directories.directory_scim_logging_set,
        name="directory_scim_logging",
    ),
    path(
        "directories/<str:directory_id>/scim-secret/revoke-previous",
        directories.directory_previous_scim_secret_revoke,
        name="directory_scim_secret_revoke_previous",
    ),
    # The deprovision guard (contract §4.2): the held changes, and approving or discarding them.
    path("directories/<str:directory_id>/held-changes", held_changes.held_change_list, name="held_changes"),
    path(
        "directories/<str:directory_id>/held-changes/resolve",
        held_changes.held_changes_resolve,
        name="held_changes_resolve",
    ),
    # Setup links (contract §3.1): "Invite IT admin", and revoking a link.
    path(
        "directories/<str:directory_id>/setup-links",
        setup_links.setup_link_invite,
        name="setup_link_invite",
    ),
    path(
        "directories/<str:directory_id>/setup-links/<str:link_id>/revoke",
        setup_links.setup_link_revoke_view,
        name="setup_link_revoke",
    ),
]
