from __future__ import annotations

from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "history"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The changes feed's purge sits below this app (webhooks): it is handed the fold, so that no event
        # is deleted before history has kept what it says (contract §5.3, "retention stays honest").
        from directories.management.commands import directories
        from history import export, services
        from webhooks.services import sweeping

        sweeping.before_feed_purge_set(services.history_fold_directory_id)
        # `manage.py directories export <id> --at <time>`: the command sits below this app.
        directories.export_at_set(export.export_at)
