from __future__ import annotations

from django.apps import AppConfig


class SetupLinksConfig(AppConfig):
    name = "setuplinks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # `manage.py directories setup-link …` lives in the directories command, which sits below this app
        # (the layers in pyproject.toml): its subcommands are handed down here, once, at start-up.
        from directories.management.commands import directories
        from setuplinks import commands

        for name, subcommand in commands.SUBCOMMANDS.items():
            directories.subcommand_add(name, subcommand)
