from __future__ import annotations

from django.apps import AppConfig


class DirectoriesConfig(AppConfig):
    name = "directories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # `manage.py directories held …` is the deprovision guard's; the command module imports the guard's
        # reads, so the guard's subcommand is handed to it here, once, at start-up, as other apps hand theirs.
        from directories.guard import commands
        from directories.management.commands import directories

        for name, subcommand in commands.SUBCOMMANDS.items():
            directories.subcommand_add(name, subcommand)
