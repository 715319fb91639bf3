from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The wires that keep imports one-way (the layers in pyproject.toml), made once at start-up.
        # Imported here, not at the top: these modules import models, which exist only once the apps are loaded.
        from directories import outbox
        from webhooks import feed, services, tasks, transport
        from webhooks.services import draining

        # Celery is known to the task module only: draining asks its publisher for drains, and transport
        # learns which exception means "the task must stop now" (never an attempt's outcome).
        draining.publisher_set(tasks.drain_publish)
        transport.task_stop_set(*tasks.TASK_STOP)
        # Directory writes record dsync.* events in the outbox, the Directory shows where its changes feed
        # stands, and the deprovision guard records the events of the changes it applies; directories sits
        # below webhooks.
        outbox.outbox_set(
            outbox.DirectoryOutbox(
                event_record=services.directory_event_record,
                events_delete=services.directory_events_delete,
                feed_heads=feed.feed_head_pairs,
                changes_record=services.events_record,
            )
        )
