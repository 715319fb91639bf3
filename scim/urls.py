"""SCIM 2.0 routes under /api/scim/v2.0/<directory_id>/ (contract §4), built from scim.routes, the table
scim.wsgi matches by too."""

from __future__ import annotations

from django.urls import re_path

from scim.routes import PATTERNS
from scim.views import scim_view

urlpatterns = [re_path(f"^{pattern}$", scim_view) for pattern in PATTERNS]
