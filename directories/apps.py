from __future__ import annotations

from django.apps import AppConfig


class DirectoriesConfig(AppConfig):
    name = "directories"
    default_auto_field = "django.db.models.BigAutoField"
