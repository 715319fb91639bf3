"""Routes of the admin API, mounted at /auditlog/admin/v1/ (contract §6)."""

from __future__ import annotations

from django.urls import path, re_path

from adminapi import apis

urlpatterns = [
    path("user/_login", apis.LoginApi.as_view(), name="admin-login"),
    path("directories", apis.DirectoriesApi.as_view(), name="admin-directories"),
    path("directories/<str:directory_id>", apis.DirectoryApi.as_view(), name="admin-directory"),
    path("directories/<str:directory_id>/scim-secret", apis.ScimSecretApi.as_view(), name="admin-scim-secret"),
    path("directories/<str:directory_id>/webhook-secret", apis.WebhookSecretApi.as_view(), name="admin-webhook-secret"),
    path(
        "directories/<str:directory_id>/scim-oauth-secret",
        apis.ScimOAuthSecretApi.as_view(),
        name="admin-scim-oauth-secret",
    ),
    path("directories/<str:directory_id>/users", apis.DirectoryUsersApi.as_view(), name="admin-directory-users"),
    path("directories/<str:directory_id>/groups", apis.DirectoryGroupsApi.as_view(), name="admin-directory-groups"),
    path("directories/<str:directory_id>/events", apis.DirectoryEventsApi.as_view(), name="admin-directory-events"),
    path(
        "directories/<str:directory_id>/changes/resend",
        apis.ChangesResendApi.as_view(),
        name="admin-directory-changes-resend",
    ),
    path(
        "directories/<str:directory_id>/scim-secret/previous",
        apis.PreviousScimSecretApi.as_view(),
        name="admin-scim-secret-previous",
    ),
    path(
        "directories/<str:directory_id>/scim-requests",
        apis.DirectoryScimRequestsApi.as_view(),
        name="admin-directory-scim-requests",
    ),
    path(
        "directories/<str:directory_id>/setup-links",
        apis.SetupLinksApi.as_view(),
        name="admin-directory-setup-links",
    ),
    path(
        "directories/<str:directory_id>/setup-links/<str:link_id>",
        apis.SetupLinkApi.as_view(),
        name="admin-directory-setup-link",
    ),
    # The deprovision guard's held changes (contract §4.2).
    path(
        "directories/<str:directory_id>/held-changes",
        apis.HeldChangesApi.as_view(),
        name="admin-directory-held-changes",
    ),
    path(
        "directories/<str:directory_id>/held-changes/approve",
        apis.HeldChangesApproveApi.as_view(),
        name="admin-directory-held-changes-approve",
    ),
    path(
        "directories/<str:directory_id>/held-changes/discard",
        apis.HeldChangesDiscardApi.as_view(),
        name="admin-directory-held-changes-discard",
    ),
    path("token", apis.TokensApi.as_view(), name="admin-tokens"),
    path("token/<str:token_id>", apis.TokenApi.as_view(), name="admin-token"),
    path("users", apis.AdminUsersApi.as_view(), name="admin-users"),
    path("user/<str:user_id>", apis.AdminUserApi.as_view(), name="admin-user"),
    path("audit", apis.AuditApi.as_view(), name="admin-audit"),
    re_path(r"^.*$", apis.not_found),
]
