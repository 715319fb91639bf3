from __future__ import annotations

from django.apps import AppConfig


class AdminauthConfig(AppConfig):
    name = "adminauth"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # `manage.py directories held …` lives in the directories command, which sits below this app (the
        # layers in pyproject.toml): its subcommand is handed down here, once, at start-up.
        from adminauth import commands
        from directories.management.commands import directories

        for name, subcommand in commands.SUBCOMMANDS.items():
            directories.subcommand_add(name, subcommand)
