from __future__ import annotations

from django.apps import AppConfig


class ScimConfig(AppConfig):
    name = "scim"
    default_auto_field = "django.db.models.BigAutoField"
