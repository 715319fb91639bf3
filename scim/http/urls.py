"""SCIM 2.0 routes under /api/scim/v2.0/<directory_id>/ (contract §4), built from the patterns of
scim.routes, which scim.http.wsgi matches by too."""

from __future__ import annotations

from django.urls import re_path

from scim.http.views import scim_view
from scim.routes import PATTERNS

urlpatterns = [re_path(f"^{pattern}$", scim_view) for pattern in PATTERNS]
