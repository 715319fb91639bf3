"""Resending a directory's events on request (contract §5.1): one more attempt of each chosen event, to
the directory's current webhook endpoint, with the same id, sequence and body (the drain signs it with a
fresh timestamp and logs the attempt as a resend).

Nothing here resends by itself: every resend is asked for by someone (the REST API, the admin API, the
portal, `manage.py webhooks_resend`), whose Actor the caller hands in, and the resend is audited in the same
transaction as the queueing. A refused resend (400, 409) queues nothing and leaves no entry.

Queueing is one UPDATE that puts the chosen events whose attempt is over (delivered, failed, dropped)
back to `pending` with `resend` set; events still `pending` or `sending` are left alone, since they are
getting their attempt anyway, and are not counted. The drain claims pending events in sequence order,
so a resent event goes out in its place among the directory's other pending events. After commit one
kick asks for a drain; when the broker is down the sweep finds the events later: it looks at pending
events by `created_at`, which for a resent event is its original (old) recording time, so the first
sweep after the resend picks it up. The backlog's age (/metrics, `manage.py doctor`) counts from
`pending_since`, the moment of the resend, instead.
"""

from __future__ import annotations

import functools
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

import webhooks.services.draining as draining
from audit.actors import Actor
from audit.services import audit_record
from core.errors import Conflict, NotFound, ValidationFailed
from core.text import INT_MAX
from directories.models import Directory
from webhooks.models import EndpointDelivery, EventState, WebhookEndpoint, WebhookEvent
from webhooks.services.fanout import filters_match

logger = logging.getLogger("roster.webhooks")

RESEND_MAX = 1000  # events per request, by range or by ids
FINAL_STATES = (EventState.DELIVERED, EventState.FAILED, EventState.DROPPED)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_FIELDS = ("from", "to", "event_ids", "endpoint_id")
# How many unknown ids a 400 names, so its message stays readable with a thousand of them.
_IDS_NAMED = 10


@dataclass(frozen=True, slots=True)
class ResendRequest:
    """What a JSON body asks for: a range of sequence numbers, or event ids (exactly one of them)."""

    first: Any = None
    last: Any = None
    event_ids: Any = None
    endpoint_id: Any = None  # one webhook endpoint to send to (contract §5.2), instead of the directory's own


def changes_resend_input(body: Any) -> ResendRequest:
    """Read the body of `POST …/changes/resend` (REST and admin API): `{"from": a, "to": b}` or
    `{"event_ids": [...]}`, nothing else. The values themselves are checked by changes_resend."""
    if not isinstance(body, dict):
        raise ValidationFailed("The body must be a JSON object.")
    unknown = sorted(set(body) - set(_FIELDS))
    if unknown:
        raise ValidationFailed(
            f"Unknown field(s): {', '.join(unknown)}. Accepted: from and to, or event_ids; and endpoint_id.",
            field=unknown[0],
        )
    has_range = "from" in body or "to" in body
    if has_range and "event_ids" in body:
        raise ValidationFailed("Send either from and to, or event_ids, not both.", field="event_ids")
    if not has_range and "event_ids" not in body:
        raise ValidationFailed('Send {"from": <sequence>, "to": <sequence>} or {"event_ids": [<event id>, ...]}.')
    if has_range:
        for name in ("from", "to"):
            if name not in body:
                raise ValidationFailed(f"{name} is required with a range (both ends are inclusive).", field=name)
        return ResendRequest(first=body["from"], last=body["to"], endpoint_id=body.get("endpoint_id"))
    return ResendRequest(event_ids=body["event_ids"], endpoint_id=body.get("endpoint_id"))


def _range_checked(first: Any, last: Any) -> tuple[int, int]:
    for name, value in (("from", first), ("to", last)):
        # bool is an int in Python; true is not a sequence number.
        if type(value) is not int or not 1 <= value <= INT_MAX:
            raise ValidationFailed(f"{name} must be an integer from 1 to {INT_MAX} (a sequence number).", field=name)
    if first > last:
        raise ValidationFailed("from must not be greater than to.", field="from")
    if last - first + 1 > RESEND_MAX:
        raise ValidationFailed(
            f"A resend covers at most {RESEND_MAX} events: to - from + 1 is {last - first + 1}.", field="to"
        )
    return first, last


def _ids_checked(event_ids: Any) -> list[uuid.UUID]:
    if not isinstance(event_ids, list | tuple) or not 1 <= len(event_ids) <= RESEND_MAX:
        raise ValidationFailed(f"event_ids must be a list of 1 to {RESEND_MAX} event ids.", field="event_ids")
    ids: dict[uuid.UUID, None] = {}  # in the order given, each once
    for value in event_ids:
        if isinstance(value, uuid.UUID):
            ids[value] = None
        elif isinstance(value, str) and _UUID.fullmatch(value):
            ids[uuid.UUID(value)] = None
        else:
            raise ValidationFailed("event_ids must hold event ids (UUIDs as strings).", field="event_ids")
    return list(ids)


def _selection(first: Any, last: Any, event_ids: Any) -> tuple[tuple[int, int] | None, list[uuid.UUID] | None]:
    has_range = first is not None or last is not None
    if has_range == (event_ids is not None):
        raise ValidationFailed("Give either a range (from and to) or event_ids, not both and not neither.")
    if has_range:
        return _range_checked(first, last), None
    return None, _ids_checked(event_ids)


def resend_range_end(first: Any, last_sequence: int) -> Any:
    """The `to` of a resend that names only where to start (the portal's form, the command without
    --to): as far as the newest event, at most RESEND_MAX events. A start past the newest event gives a
    range of that one number, which queues nothing. A start that is not a sequence number is returned
    as it is, for changes_resend to refuse with its message."""
    if type(first) is not int or first < 1:
        return first
    return max(first, min(first + RESEND_MAX - 1, last_sequence))


def resend_refusal(directory: Directory) -> str | None:
    """Why events of `directory` cannot be resent now (a 409), or None when they can."""
    if directory.deactivated:
        return "The directory is deactivated: activate it before resending its events."
    if not directory.webhook_url:
        return "The directory has no webhook endpoint: set its webhook_url before resending its events."
    return None


def changes_resend(
    *,
    directory: Directory,
    first: int | None = None,
    last: int | None = None,
    event_ids: list[str] | list[uuid.UUID] | None = None,
    endpoint_id: Any = None,
    actor: Actor,
) -> int:
    """Ask for one more attempt of the directory's events numbered `first`..`last` (inclusive) or of
    `event_ids`; returns how many were queued. Numbers of a range that were purged or not given yet are
    skipped (what exists is queued); an id that is not one of this directory's events is a 400 and
    nothing is queued. A deactivated directory or one without a webhook is a 409.

    Runs in its own transaction (a savepoint inside the caller's), with its audit entry
    (`directory.events_resent`: what was asked and how many were queued). One drain is asked for after
    commit."""
    span, ids = _selection(first, last, event_ids)
    if endpoint_id is not None:
        return _endpoint_resend(directory=directory, span=span, ids=ids, endpoint_id=endpoint_id, actor=actor)
    with transaction.atomic():
        current = Directory.objects.filter(pk=directory.pk).first()
        if current is None:
            raise NotFound("Directory not found.")
        refusal = resend_refusal(current)
        if refusal:
            raise Conflict(refusal)
        events = WebhookEvent.objects.filter(directory_id=current.id, target="directory", sequence__isnull=False)
        if ids is not None:
            found = set(events.filter(id__in=ids).values_list("id", flat=True))
            unknown = [str(event_id) for event_id in ids if event_id not in found]
            if unknown:
                named = ", ".join(unknown[:_IDS_NAMED]) + (
                    f" and {len(unknown) - _IDS_NAMED} more" if len(unknown) > _IDS_NAMED else ""
                )
                raise ValidationFailed(
                    f"Not events of this directory (or no longer kept): {named}. Nothing was queued.",
                    field="event_ids",
                )
            chosen = events.filter(id__in=ids)
        else:
            low, high = span or (0, -1)
            chosen = events.filter(sequence__gte=low, sequence__lte=high)
        queued = chosen.filter(state__in=FINAL_STATES).update(
            state=EventState.PENDING,
            resend=True,
            claimed_at=None,
            finished_at=None,
            state_reason="",
            pending_since=timezone.now(),
        )
        if queued:
            # One kick for the whole request (draining.kick never raises: with the broker down the
            # events wait for the sweep, and the request still succeeds).
            transaction.on_commit(functools.partial(draining.kick, current.id, "directory"))
        asked: dict[str, Any] = {"event_ids": [str(i) for i in ids]} if ids is not None else {"from": first, "to": last}
        audit_record(
            actor=actor,
            action="directory.events_resent",
            target_type="directory",
            target_id=current.id,
            directory_id=current.id,
            details={"name": current.name, **asked, "queued": queued},
        )
    what = f"sequence {span[0]} to {span[1]}" if span else f"{len(ids or ())} event id(s)"
    logger.info("resend of %s of directory %s asked by %s: %d event(s) queued", what, current.id, actor.name, queued)
    return queued


def _endpoint_resend(
    *, directory: Directory, span: tuple[int, int] | None, ids: list[uuid.UUID] | None, endpoint_id: Any, actor: Actor
) -> int:
    """One more attempt of the chosen events to one webhook endpoint (contract §5.2), which must take them
    now: its filters must match the directory, and each event named by id must be one of its events (a
    range skips the events of a type it does not take). Works whether or not the directory has a webhook
    of its own. Each event's delivery to the endpoint goes back to pending (or is created, for an event
    recorded before the endpoint existed), marked as a resend. Audited as `directory.events_resent`."""
    try:
        endpoint_uuid = uuid.UUID(str(endpoint_id))
    except (ValueError, TypeError, AttributeError):
        raise ValidationFailed("endpoint_id must be a webhook endpoint's id.", field="endpoint_id") from None
    with transaction.atomic():
        current = Directory.objects.filter(pk=directory.pk).first()
        if current is None:
            raise NotFound("Directory not found.")
        if current.deactivated:
            raise Conflict("The directory is deactivated: activate it before resending its events.")
        endpoint = WebhookEndpoint.objects.filter(pk=endpoint_uuid, deleted_at__isnull=True).first()
        if endpoint is None:
            raise ValidationFailed("endpoint_id names no webhook endpoint.", field="endpoint_id")
        if not filters_match(endpoint, current.id, current.tenant, current.product):
            raise ValidationFailed(
                "This endpoint does not take this directory's events now (disabled, or its filters differ).",
                field="endpoint_id",
            )
        events = WebhookEvent.objects.filter(directory_id=current.id, target="directory", sequence__isnull=False)
        if ids is not None:
            chosen = list(events.filter(id__in=ids))
            found = {event.id for event in chosen}
            unknown = [str(event_id) for event_id in ids if event_id not in found]
            if unknown:
                raise ValidationFailed(
                    f"Not events of this directory (or no longer kept): {', '.join(unknown[:_IDS_NAMED])}. "
                    "Nothing was queued.",
                    field="event_ids",
                )
            refused = [str(e.id) for e in chosen if "*" not in endpoint.events and e.event_type not in endpoint.events]
            if refused:
                raise ValidationFailed(
                    f"The endpoint does not take these events: {', '.join(refused[:_IDS_NAMED])}. Nothing was queued.",
                    field="endpoint_id",
                )
        else:
            low, high = span or (0, -1)
            chosen = [
                e
                for e in events.filter(sequence__gte=low, sequence__lte=high)
                if "*" in endpoint.events or e.event_type in endpoint.events
            ]
        by_event = {
            d.event_id: d
            for d in EndpointDelivery.objects.filter(endpoint=endpoint, event_id__in=[e.id for e in chosen])
        }
        queued = 0
        fresh: list[EndpointDelivery] = []
        for event in chosen:
            delivery = by_event.get(event.id)
            if delivery is None:
                fresh.append(
                    EndpointDelivery(
                        endpoint=endpoint,
                        event_id=event.id,
                        directory_id=current.id,
                        event_type=event.event_type,
                        sequence=event.sequence,
                        url=endpoint.url,
                        event_created_at=event.created_at,
                        resend=True,
                    )
                )
            elif delivery.state in FINAL_STATES:
                queued += EndpointDelivery.objects.filter(pk=delivery.pk, state__in=FINAL_STATES).update(
                    state=EventState.PENDING, resend=True, claimed_at=None, finished_at=None, state_reason="",
                    created_at=timezone.now(),
                )  # fmt: skip
        EndpointDelivery.objects.bulk_create(fresh, ignore_conflicts=True)
        queued += len(fresh)
        if queued:
            transaction.on_commit(functools.partial(draining.kick, current.id, "directory"))
        asked: dict[str, Any] = (
            {"event_ids": [str(i) for i in ids]}
            if ids is not None
            else {"from": span[0], "to": span[1]}
            if span
            else {}
        )
        audit_record(
            actor=actor,
            action="directory.events_resent",
            target_type="directory",
            target_id=current.id,
            directory_id=current.id,
            details={"name": current.name, **asked, "endpoint_id": str(endpoint.id), "queued": queued},
        )
    logger.info(
        "resend to endpoint %s of directory %s asked by %s: %d queued", endpoint.id, current.id, actor.name, queued
    )
    return queued
