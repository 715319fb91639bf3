"""The webhook outbox, the changes feed, and the delivery log (contract §5, §5.1).

`WebhookEvent` rows are written in the same transaction as the change they describe, so a committed
change always has its event. `body` holds the exact JSON bytes that are signed and sent. A directory's
own events (target "directory") carry a `sequence` (1, 2, 3… per directory, in commit order) and stay
after their attempt, with its outcome, for EVENT_RETENTION_DAYS: together they are the directory's
changes feed (docs/events.md says how the numbers stay gap-free).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from core.crypto import EncryptedTextField


class EventState(models.TextChoices):
    PENDING = "pending", "Pending"  # committed, not yet handed to a worker
    SENDING = "sending", "Sending"  # a worker has claimed it and is making the one attempt
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    DROPPED = "dropped", "Dropped"  # never attempted on purpose (directory deactivated, deleted, no webhook)


class WebhookEvent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Not a foreign key: a dsync.deleted event outlives its directory. Indexed by `event_drain`.
    directory_id = models.UUIDField()
    event_type = models.CharField(max_length=64)
    # "directory": the directory's own webhook; "global": WEBHOOK_URL (dsync.* events).
    target = models.CharField(max_length=16, default="directory")
    body = models.TextField()
    state = models.CharField(max_length=16, choices=EventState.choices, default=EventState.PENDING)
    state_reason = models.CharField(max_length=255, blank=True, default="")
    # Set as the event is built (webhooks.services.outbox.outbox_rows: one microsecond apart within a
    # transaction, to keep the recorded order).
    created_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The directory's event number (contract §5.1); None for dsync.* events (target "global").
    sequence = models.BigIntegerField(null=True, blank=True)
    # The outcome of the attempts so far, shown in the changes feed: how many were made, when the last
    # one started, and the receiver's HTTP status of the last one (None: no answer, or none made).
    attempts = models.PositiveIntegerField(default=0)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # The pending attempt was asked for by a resend (contract §5.1), not by the change itself.
    resend = models.BooleanField(default=False)
    # When a resend put the event back to pending (None for an event pending since it was recorded): the
    # outbox backlog's age counts from here, so resending a week-old event does not read as a week-old
    # backlog on /metrics and in `manage.py doctor`.
    pending_since = models.DateTimeField(null=True, blank=True)
    # The worker has matched the event against the webhook endpoints and created its endpoint deliveries
    # (contract §5.2). A database default, so the SCIM write's own INSERT statements need not name it.
    fanned_out = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["state", "created_at"], name="event_state_created"),
            # The drain's batch claim: one directory's pending events of one target, in sequence order
            # (dsync.* events have none and go by created_at). Also serves every other lookup by directory.
            models.Index(
                fields=["directory_id", "target", "state", "sequence", "created_at", "id"], name="event_drain"
            ),
        ]
        constraints = [
            # Never reused, and the changes feed's index: a directory's events by number.
            models.UniqueConstraint(
                fields=["directory_id", "sequence"],
                condition=models.Q(sequence__isnull=False),
                name="event_directory_sequence",
            ),
        ]
        indexes += [
            # The fan-out's claim and the sweep's look for events not matched yet: few rows.
            models.Index(
                fields=["directory_id", "created_at"],
                condition=models.Q(fanned_out=False),
                name="event_fanout_pending",
            ),
        ]


class EventSequence(models.Model):
    """The last sequence number given to one directory's events (contract §5.1). Taken by the statement
    that records a change's events, which is the last write of its transaction: the row lock it takes
    is held only until that transaction commits, so numbers are given in commit order (docs/events.md).
    Kept after the directory's events are purged, so numbers are never reused."""

    directory_id = models.UUIDField(primary_key=True)
    last = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.directory_id}: {self.last}"


class WebhookDelivery(models.Model):
    """One delivery attempt, kept only when the directory has `log_webhook_events` on (contract §5).

    The row copies what it needs from the outbox event (id, type, payload), so the outbox row can be
    purged independently. It cascades with its directory: deleting a directory deletes its log.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: `delivery_directory_created` and `delivery_directory_failed` start with it.
    directory = models.ForeignKey(
        "directories.Directory", on_delete=models.CASCADE, related_name="webhook_deliveries", db_index=False
    )
    event_id = models.UUIDField(db_index=True)
    event_type = models.CharField(max_length=64)
    endpoint = models.CharField(max_length=2048, blank=True, default="")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    # e.g. "HTTPStatus", "Timeout", "ConnectionRefused", "Redirect", "BlockedAddress", "WorkerLost", "Dropped".
    error_class = models.CharField(max_length=64, blank=True, default="")
    error_message = models.CharField(max_length=500, blank=True, default="")
    response_excerpt = models.TextField(blank=True, default="")
    payload = models.TextField()
    delivered = models.BooleanField(default=False)
    # The event's number in its directory's feed, and whether this attempt was an explicit resend.
    sequence = models.BigIntegerField(null=True, blank=True)
    resend = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    attempted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["directory", "created_at", "id"], name="delivery_directory_created"),
            models.Index(fields=["directory", "delivered", "created_at"], name="delivery_directory_failed"),
            models.Index(fields=["created_at"], name="delivery_created"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} ({'delivered' if self.delivered else 'failed'})"


class Heartbeat(models.Model):
    """The last time a background process showed it was alive, where every node can read it.

    `sweep`: the last run of the sweep (celery beat's `webhooks.sweep`, or `manage.py webhooks_sweep`
    from cron), which `manage.py doctor` and /metrics read to tell that beat runs. `ping:<token>`: the
    answer of a worker to `manage.py doctor`'s ping task, deleted once read.
    """

    name = models.CharField(max_length=64, primary_key=True)
    at = models.DateTimeField()
    detail = models.CharField(max_length=255, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.name} at {self.at}"


class EndpointFormat(models.TextChoices):
    ROSTER = "roster", "Roster-Signature"
    STANDARD = "standard", "Standard Webhooks v1"


class WebhookEndpoint(models.Model):
    """A destination beside the directories' own webhooks (contract §5.2): the events it takes and the
    directories it takes them from (`tenant`, `product`, `directory_id`; None matches any).

    What an event matches is decided by the revision in force when the event was recorded
    (`WebhookEndpointRevision`), so a change applies to events committed after it. The secret is read
    when a delivery is signed: a rotation applies at once, to events already waiting too. A deleted
    endpoint keeps its row (`deleted_at`) so that its delivery log stays readable until the purge."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=500, blank=True, default="")
    events = models.JSONField(default=list)
    tenant = models.CharField(max_length=200, null=True, blank=True)
    product = models.CharField(max_length=200, null=True, blank=True)
    # Not a foreign key: the filter names a directory that may be deleted later (it then matches nothing).
    directory_id = models.UUIDField(null=True, blank=True)
    format = models.CharField(max_length=16, choices=EndpointFormat.choices, default=EndpointFormat.ROSTER)
    enabled = models.BooleanField(default=True)
    secret = EncryptedTextField()
    # The secret before the last rotation, signed with too until `previous_secret_expires_at` (standard only).
    previous_secret = EncryptedTextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.url} ({self.id})"


class WebhookEndpointRevision(models.Model):
    """What an endpoint matched and where it sent, from `valid_from` until `valid_until` (None: still in
    force). Each create, change, enable, disable or delete closes the revision in force and opens the next
    one, so the worker matches an event against the endpoints as they were when it was recorded."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="revisions")
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True)
    url = models.CharField(max_length=2048)
    events = models.JSONField(default=list)
    tenant = models.CharField(max_length=200, null=True, blank=True)
    product = models.CharField(max_length=200, null=True, blank=True)
    directory_id = models.UUIDField(null=True, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        indexes = [models.Index(fields=["valid_until", "valid_from"], name="endpoint_revision_window")]

    def __str__(self) -> str:
        return f"{self.endpoint_id} from {self.valid_from}"


class EndpointDelivery(models.Model):
    """One event's single attempt to one endpoint (contract §5.2), created by the worker's fan-out. Its
    state moves like an outbox event's: pending -> sending (the claim) -> delivered | failed | dropped; an
    explicit resend puts it back to pending for one more attempt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField()
    directory_id = models.UUIDField()
    event_type = models.CharField(max_length=64)
    sequence = models.BigIntegerField(null=True, blank=True)
    # The endpoint's URL when the event was recorded (its revision then).
    url = models.CharField(max_length=2048)
    event_created_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=EventState.choices, default=EventState.PENDING)
    state_reason = models.CharField(max_length=255, blank=True, default="")
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    attempted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    error_class = models.CharField(max_length=64, blank=True, default="")
    error_message = models.CharField(max_length=500, blank=True, default="")
    # Kept only when the directory has `log_webhook_events` on, like the directory's own attempt log.
    response_excerpt = models.TextField(blank=True, default="")
    resend = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["event_created_at", "id"]
        indexes = [
            models.Index(fields=["directory_id", "state", "event_created_at"], name="endpoint_delivery_drain"),
            models.Index(fields=["endpoint", "created_at"], name="endpoint_delivery_log"),
            models.Index(fields=["event_id"], name="endpoint_delivery_event"),
            models.Index(fields=["state", "created_at"], name="endpoint_delivery_state"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["event_id", "endpoint"], name="endpoint_delivery_once"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} -> {self.endpoint_id} ({self.state})"
