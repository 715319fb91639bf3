"""Webhook writes (services do every write, docs/architecture.md), split by topic:

- `recording`: events into the outbox, in the caller's transaction, with one drain kick after commit;
- `delivery`: claiming a directory's events in batches and making each one's single attempt;
- `reconnect`: riding out a lost database connection while the drain records what happened;
- `sweeping`: what a broker or worker outage left behind, the delivery-log purge, a deleted directory's events;
- `heartbeats`: the last sweep and the workers' answers to `manage.py doctor`'s ping;
- `resending`: one more attempt of chosen events, on request (never by itself).
"""

from __future__ import annotations

from webhooks.services.delivery import (
    BATCH_SIZE,
    CLAIM_HOLD,
    BatchResult,
    event_deliver,
    events_batch_deliver,
    sending_stale_after,
)
from webhooks.services.heartbeats import SWEEP, heartbeat_record, worker_ping_answer, worker_ping_forget
from webhooks.services.reconnect import RECORD_RETRY
from webhooks.services.recording import (
    PreparedEvents,
    directory_event_record,
    event_payload,
    event_record,
    events_prepare,
    events_record,
)
from webhooks.services.resending import (
    RESEND_MAX,
    ResendRequest,
    changes_resend,
    changes_resend_input,
    resend_range_end,
    resend_refusal,
)
from webhooks.services.sweeping import (
    SWEEP_PENDING_AGE,
    PurgeResult,
    SweepResult,
    deliveries_purge,
    directory_events_delete,
    events_sweep,
)

__all__ = [
    "BATCH_SIZE",
    "CLAIM_HOLD",
    "RECORD_RETRY",
    "RESEND_MAX",
    "SWEEP",
    "SWEEP_PENDING_AGE",
    "BatchResult",
    "PreparedEvents",
    "PurgeResult",
    "ResendRequest",
    "SweepResult",
    "changes_resend",
    "changes_resend_input",
    "deliveries_purge",
    "directory_event_record",
    "directory_events_delete",
    "event_deliver",
    "event_payload",
    "event_record",
    "events_batch_deliver",
    "events_prepare",
    "events_record",
    "events_sweep",
    "heartbeat_record",
    "resend_range_end",
    "resend_refusal",
    "sending_stale_after",
    "worker_ping_answer",
    "worker_ping_forget",
]
