"""Top-level routes: one include per surface."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("", include("directories.urls")),
    path("api/scim/v2.0/", include("scim.urls")),
    path("auditlog/admin/v1/", include("adminauth.urls")),
    path("portal/", include("portal.urls")),
    path("", include("webhooks.urls")),
]
