"""Routes of the setup page, mounted at /setup/ (config.urls). The token is matched as any segment so that
every malformed one gets the same 404 as an unknown one (setuplinks.views)."""

from __future__ import annotations

from django.urls import path, re_path

from setuplinks import views

app_name = "setup"

urlpatterns = [
    path("<str:token>", views.setup_page, name="page"),
    path("<str:token>/status", views.setup_status_part, name="status"),
    path("<str:token>/secret", views.setup_secret, name="secret"),
    path("<str:token>/oauth-secret", views.setup_oauth_secret, name="oauth_secret"),
    path("<str:token>/mapping", views.setup_mapping, name="mapping"),
    # Anything else under /setup/ (any method: a POST too is a 404 here, not a CSRF refusal).
    re_path(r"^.*$", views.setup_not_found),
]
