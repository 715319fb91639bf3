"""Celery tasks: thin shells over webhooks.services (and the SCIM activity sweep and
purge of directories.activity, and the deprovision guard's purge), taking ids and bounded in time.

The one module of webhooks that imports Celery (a contract in pyproject.toml). The tasks are shared tasks,
bound to the project's Celery app (config.celery) when it loads them, so this app does not import the
project's configuration.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.worker import state as worker_state
from django.conf import settings

from directories.activity import services as activity
from directories.guard import services as guard
from webhooks import services
from webhooks.services import drain_task, drains

# A drain works DRAIN_BUDGET seconds, then finishes the batch in hand, whose attempts stop starting after
# CLAIM_HOLD and last WEBHOOK_TIMEOUT each, then lingers LINGER. Through a lost database connection its
# claim and its recording of the outcomes may each be retried for RECORD_RETRY. The limits sit above all
# that, so they only fire on a drain that is stuck. The hard limit kills it: its claimed events are left
# `sending` and the sweep reports them as "worker lost" (services.sending_stale_after is measured from
# the claim, and a batch is claimed at most CLAIM_HOLD + WEBHOOK_TIMEOUT + RECORD_RETRY before it is
# recorded).
DRAIN_SOFT_TIME_LIMIT = int(
    drains.DRAIN_BUDGET
    + services.CLAIM_HOLD
    + 2 * float(settings.WEBHOOK_TIMEOUT)
    + 2 * services.RECORD_RETRY
    + drains.LINGER
    + 30
)
DRAIN_TIME_LIMIT = DRAIN_SOFT_TIME_LIMIT + 10
DELIVER_TIME_LIMIT = int(float(settings.WEBHOOK_TIMEOUT) + 2 * services.RECORD_RETRY) + 30

# One attempt, ever: no autoretry, and ack on receipt so a dying worker does not get the message
# redelivered behind the claim's back (the sweep reports its events instead).
_ONE_SHOT = {"ignore_result": True, "acks_late": False, "max_retries": 0}

# Raised in a task when its soft time limit fires: the task must stop, the attempt under way is no outcome
# (webhooks.apps hands these to webhooks.transport).
TASK_STOP: tuple[type[BaseException], ...] = (SoftTimeLimitExceeded,)


@shared_task(name="webhooks.drain", time_limit=DRAIN_TIME_LIMIT, soft_time_limit=DRAIN_SOFT_TIME_LIMIT, **_ONE_SHOT)
def webhook_events_drain(directory_id: str, target: str) -> dict[str, int]:
    return drain_task.drain_run(directory_id, target, should_stop=_worker_stopping)


def drain_publish(directory_id: str, target: str) -> None:
    """Ask the broker for a drain of one (directory, target): webhooks.services.draining's publisher (handed to it
    by webhooks.apps). No retries: a kick that cannot publish leaves its events to the sweep."""
    webhook_events_drain.apply_async(args=[directory_id, target], retry=False)


def _worker_stopping() -> bool:
    """A warm shutdown was asked for (the threads and solo pools share this state; a prefork child is
    covered by the drain's short budget instead)."""
    return bool(worker_state.should_stop or worker_state.should_terminate)


@shared_task(
    name="webhooks.deliver", time_limit=DELIVER_TIME_LIMIT, soft_time_limit=DELIVER_TIME_LIMIT - 5, **_ONE_SHOT
)
def webhook_event_deliver(event_id: str) -> str | None:
    """One event by id: what kicks published before deliveries were drained per directory. Kept so the
    messages still queued at an upgrade are delivered (each event is still claimed once)."""
    return services.event_deliver(event_id=event_id)


@shared_task(name="webhooks.sweep", ignore_result=True, time_limit=300)
def webhook_events_sweep() -> dict[str, int]:
    result = services.events_sweep()
    return {"enqueued": result.enqueued, "worker_lost": result.worker_lost}


@shared_task(name="webhooks.purge", ignore_result=True, time_limit=600)
def webhook_deliveries_purge() -> dict[str, int]:
    result = services.deliveries_purge()
    # The periodic purge keeps the SCIM request log to SCIM_LOG_RETENTION_DAYS too (contract §4.1), and the
    # deprovision guard's record of deprovisions to its longest window (contract §4.2).
    return {
        "deliveries": result.deliveries,
        "events": result.events,
        "scim_requests": activity.scim_log_purge(),
        "deprovisions": guard.deprovisions_purge(),
    }


@shared_task(name="webhooks.ping", bind=True, ignore_result=True, time_limit=30)
def worker_ping(self: Any, token: str) -> None:
    """`manage.py doctor`'s question "is a worker alive?": the answer is a row doctor reads."""
    services.worker_ping_answer(token=str(token), hostname=str(self.request.hostname or ""))


def worker_ping_publish(token: str) -> None:
    """Send doctor's ping. A ping no worker took while doctor waited is answered whenever one starts; its
    row is then removed by a later answer (services.worker_ping_answer)."""
    worker_ping.apply_async(args=[token], retry=False)


@shared_task(name="directories.scim_health_sweep", ignore_result=True, time_limit=300)
def scim_health_sweep() -> dict[str, int]:
    """What time alone changes in SCIM health: `silent` directories, expired previous secrets."""
    result = activity.scim_health_sweep()
    return {"silent": result.silent, "secrets_cleared": result.secrets_cleared}
