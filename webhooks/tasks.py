"""Celery tasks: thin shells over webhooks.services, taking ids and bounded in time (STYLE)."""

from __future__ import annotations

from django.conf import settings

from config.celery import app
from webhooks import services

# The hard limit kills an attempt stuck beyond the transport's own deadline; the event is then left
# `sending` and the sweep reports it as "worker lost" (services.sending_stale_after is longer).
DELIVER_TIME_LIMIT = int(float(settings.WEBHOOK_TIMEOUT)) + 30


@app.task(
    name="webhooks.deliver",
    ignore_result=True,
    # One attempt, ever: no autoretry, and ack on receipt so a dying worker does not get the message
    # redelivered behind the claim's back (the sweep reports it instead).
    acks_late=False,
    max_retries=0,
    time_limit=DELIVER_TIME_LIMIT,
    soft_time_limit=DELIVER_TIME_LIMIT - 5,
)
def webhook_event_deliver(event_id: str) -> str | None:
    return services.event_deliver(event_id=event_id)


@app.task(name="webhooks.sweep", ignore_result=True, time_limit=300)
def webhook_events_sweep() -> dict[str, int]:
    result = services.events_sweep()
    return {"enqueued": result.enqueued, "worker_lost": result.worker_lost}


@app.task(name="webhooks.purge", ignore_result=True, time_limit=600)
def webhook_deliveries_purge() -> dict[str, int]:
    result = services.deliveries_purge()
    return {"deliveries": result.deliveries, "events": result.events}
