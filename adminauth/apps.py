from __future__ import annotations

from django.apps import AppConfig


class AdminauthConfig(AppConfig):
    name = "adminauth"
    default_auto_field = "django.db.models.BigAutoField"
