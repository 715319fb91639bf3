"""SCIM 2.0 routes under /api/scim/v2.0/<directory_id>/ (contract §4)."""

from __future__ import annotations

from django.urls import path, re_path

from scim.views import scim_view

urlpatterns = [
    re_path(r"^(?P<directory_id>[^/]+)/?$", scim_view),
    re_path(r"^(?P<directory_id>[^/]+)/(?P<resource>[^/]+)/?$", scim_view),
    path("<str:directory_id>/<str:resource>/<path:resource_id>", scim_view),
]
