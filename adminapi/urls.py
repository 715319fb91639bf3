"""Routes of the admin API, mounted at /auditlog/admin/v1/ (contract §6)."""

from __future__ import annotations

from django.urls import path, re_path

from adminapi import (
    admins,
    audit,
    base,
    deliveries,
    directories,
    held_changes,
    history,
    login,
    resends,
    scim_requests,
    secrets,
    setup_links,
    users_groups,
    webhook_endpoints,
)

urlpatterns = [
    path("user/_login", login.AdminLoginApi.as_view(), name="admin-login"),
    # Webhook endpoints (contract §5.2), every tenant's.
    path("webhook-endpoints", webhook_endpoints.AdminWebhookEndpointsApi.as_view(), name="admin-webhook-endpoints"),
    path(
        "webhook-endpoints/<str:endpoint_id>",
        webhook_endpoints.AdminWebhookEndpointApi.as_view(),
        name="admin-webhook-endpoint",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/secret",
        webhook_endpoints.AdminWebhookEndpointSecretApi.as_view(),
        name="admin-webhook-endpoint-secret",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/test",
        webhook_endpoints.AdminWebhookEndpointTestApi.as_view(),
        name="admin-webhook-endpoint-test",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/deliveries",
        webhook_endpoints.AdminWebhookEndpointDeliveriesApi.as_view(),
        name="admin-webhook-endpoint-deliveries",
    ),
    path("directories", directories.AdminDirectoriesApi.as_view(), name="admin-directories"),
    path("directories/<str:directory_id>", directories.AdminDirectoryApi.as_view(), name="admin-directory"),
    path("directories/<str:directory_id>/scim-secret", secrets.AdminScimSecretApi.as_view(), name="admin-scim-secret"),
    path(
        "directories/<str:directory_id>/webhook-secret",
        secrets.AdminWebhookSecretApi.as_view(),
        name="admin-webhook-secret",
    ),
    path(
        "directories/<str:directory_id>/scim-oauth-secret",
        secrets.AdminScimOAuthSecretApi.as_view(),
        name="admin-scim-oauth-secret",
    ),
    path(
        "directories/<str:directory_id>/scim-oauth-secrets",
        secrets.AdminScimOAuthSecretsApi.as_view(),
        name="admin-scim-oauth-secrets",
    ),
    path(
        "directories/<str:directory_id>/scim-oauth-secrets/<str:secret_id>",
        secrets.AdminScimOAuthSecretsItemApi.as_view(),
        name="admin-scim-oauth-secret-item",
    ),
    path(
        "directories/<str:directory_id>/users",
        users_groups.AdminDirectoryUsersApi.as_view(),
        name="admin-directory-users",
    ),
    path(
        "directories/<str:directory_id>/groups",
        users_groups.AdminDirectoryGroupsApi.as_view(),
        name="admin-directory-groups",
    ),
    path(
        "directories/<str:directory_id>/events",
        deliveries.AdminDirectoryEventsApi.as_view(),
        name="admin-directory-events",
    ),
    path(
        "directories/<str:directory_id>/changes/resend",
        resends.AdminChangesResendApi.as_view(),
        name="admin-directory-changes-resend",
    ),
    path(
        "directories/<str:directory_id>/scim-secret/previous",
        secrets.AdminPreviousScimSecretApi.as_view(),
        name="admin-scim-secret-previous",
    ),
    path(
        "directories/<str:directory_id>/scim-requests",
        scim_requests.AdminDirectoryScimRequestsApi.as_view(),
        name="admin-directory-scim-requests",
    ),
    path(
        "directories/<str:directory_id>/setup-links",
        setup_links.AdminSetupLinksApi.as_view(),
        name="admin-directory-setup-links",
    ),
    path(
        "directories/<str:directory_id>/setup-links/<str:link_id>",
        setup_links.AdminSetupLinkApi.as_view(),
        name="admin-directory-setup-link",
    ),
    # The deprovision guard's held changes (contract §4.2).
    path(
        "directories/<str:directory_id>/held-changes",
        held_changes.AdminHeldChangesApi.as_view(),
        name="admin-directory-held-changes",
    ),
    path(
        "directories/<str:directory_id>/held-changes/approve",
        held_changes.AdminHeldChangesApproveApi.as_view(),
        name="admin-directory-held-changes-approve",
    ),
    path(
        "directories/<str:directory_id>/held-changes/discard",
        held_changes.AdminHeldChangesDiscardApi.as_view(),
        name="admin-directory-held-changes-discard",
    ),
    # History (contract §5.3): the directory at a point, and the diff between two.
    path(
        "directories/<str:directory_id>/history/users",
        history.AdminHistoryUsersApi.as_view(),
        name="admin-directory-history-users",
    ),
    path(
        "directories/<str:directory_id>/history/groups",
        history.AdminHistoryGroupsApi.as_view(),
        name="admin-directory-history-groups",
    ),
    path(
        "directories/<str:directory_id>/history/groups/<str:group_id>/members",
        history.AdminHistoryGroupMembersApi.as_view(),
        name="admin-directory-history-group-members",
    ),
    path(
        "directories/<str:directory_id>/diff",
        history.AdminHistoryDiffApi.as_view(),
        name="admin-directory-history-diff",
    ),
    path("token", admins.AdminTokensApi.as_view(), name="admin-tokens"),
    path("token/<str:token_id>", admins.AdminTokenApi.as_view(), name="admin-token"),
    path("users", admins.AdminUsersApi.as_view(), name="admin-users"),
    path("user/<str:user_id>", admins.AdminUserApi.as_view(), name="admin-user"),
    path("audit", audit.AdminAuditApi.as_view(), name="admin-audit"),
    re_path(r"^.*$", base.not_found),
]
