"""The webhook outbox and the delivery log (SPEC §5).

`WebhookEvent` rows are written in the same transaction as the change they describe, so a committed
change always has its event. `body` holds the exact JSON bytes that are signed and sent.
"""

from __future__ import annotations

import uuid

from django.db import models


class EventState(models.TextChoices):
    PENDING = "pending", "Pending"  # committed, not yet handed to a worker
    SENDING = "sending", "Sending"  # a worker has claimed it and is making the one attempt
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    DROPPED = "dropped", "Dropped"  # never attempted on purpose (directory deactivated, deleted, no webhook)


class WebhookEvent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Not a foreign key: a dsync.deleted event outlives its directory.
    directory_id = models.UUIDField(db_index=True)
    event_type = models.CharField(max_length=64)
    # "directory": the directory's own webhook; "global": WEBHOOK_URL (dsync.* events).
    target = models.CharField(max_length=16, default="directory")
    body = models.TextField()
    state = models.CharField(max_length=16, choices=EventState.choices, default=EventState.PENDING)
    state_reason = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["state", "created_at"], name="event_state_created")]
