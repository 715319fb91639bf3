from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The one wire between delivery and Celery: dispatch asks tasks' publisher for drains, without
        # importing the task module that imports it (no import cycle between the two). Imported here, not at
        # the top: the task module imports models, which exist only once the apps are loaded.
        from webhooks import dispatch, tasks

        dispatch.publisher_set(tasks.drain_publish)
