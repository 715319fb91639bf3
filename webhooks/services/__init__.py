"""Webhook writes (services do every write, docs/architecture.md), split by topic, each module importing only
those below it (a contract in pyproject.toml):

- `recording`: events into the outbox, in the caller's transaction, with one drain kick after commit;
  `resending`: one more attempt of chosen events, on request (never by itself); `sweeping`: what a
  broker or worker outage left behind, the purges, a deleted directory's events;
- `draining`: the kick after commit and its breaker; `drain_task`, the broker's drain task; `drain_pool`, the
  in-process pool without a broker; `drains`, one drain's run, which both use;
- `delivery`: claiming a directory's events in batches and making each one's single attempt;
- `outbox`: every statement on the outbox table (numbering and inserting events, claims, outcomes);
  `reconnect`: riding out a lost database connection while the drain records what happened;
  `heartbeats`: the last sweep and the workers' answers to `manage.py doctor`'s ping.

What the other apps call is re-exported here. Inside this package, modules import each other by their
own names (`webhooks.services.delivery`), never through this one, which imports them all.
"""

from __future__ import annotations

from webhooks.services.delivery import (
    CLAIM_HOLD,
    BatchResult,
    event_deliver,
    events_batch_deliver,
    sending_stale_after,
)
from webhooks.services.heartbeats import SWEEP, heartbeat_record, worker_ping_answer, worker_ping_forget
from webhooks.services.outbox import PreparedEvents
from webhooks.services.reconnect import RECORD_RETRY
from webhooks.services.recording import (
    directory_event_record,
    event_record,
    events_prepare,
    events_record,
    events_written,
)
from webhooks.services.resending import (
    RESEND_MAX,
    changes_resend,
    changes_resend_input,
    resend_range_end,
    resend_refusal,
)
from webhooks.services.sweeping import (
    SWEEP_PENDING_AGE,
    deliveries_purge,
    directory_events_delete,
    events_sweep,
)

__all__ = [
    "CLAIM_HOLD",
    "RECORD_RETRY",
    "RESEND_MAX",
    "SWEEP",
    "SWEEP_PENDING_AGE",
    "BatchResult",
    "PreparedEvents",
    "changes_resend",
    "changes_resend_input",
    "deliveries_purge",
    "directory_event_record",
    "directory_events_delete",
    "event_deliver",
    "event_record",
    "events_batch_deliver",
    "events_prepare",
    "events_record",
    "events_sweep",
    "events_written",
    "heartbeat_record",
    "resend_range_end",
    "resend_refusal",
    "sending_stale_after",
    "worker_ping_answer",
    "worker_ping_forget",
]
