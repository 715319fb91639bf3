"""Reads of SCIM activity, always scoped by directory: the request log, and directories by health state."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Case, F, QuerySet, Value, When
from django.db.models.functions import Coalesce

from directories.models import Directory, HealthState, ScimLogEntry


def scim_log_list(
    *, directory: Directory, failed: bool | None = None, status: int | None = None
) -> QuerySet[ScimLogEntry]:
    """The directory's request log, newest first; `failed` keeps the 4xx/5xx (True) or the others
    (False), `status` one status; both given, entries that match both."""
    qs = ScimLogEntry.objects.filter(directory=directory)
    if failed is not None:
        qs = qs.filter(status__gte=400) if failed else qs.filter(status__lt=400)
    if status is not None:
        qs = qs.filter(status=status)
    return qs.order_by("-at", "-id")


def scim_log_get(*, directory: Directory, entry_id: Any) -> ScimLogEntry | None:
    """One entry of this directory's log; None for an unknown id, a malformed one, or another directory's."""
    try:
        pk = uuid.UUID(str(entry_id))
    except (ValueError, TypeError, AttributeError):
        return None
    return ScimLogEntry.objects.filter(directory=directory, pk=pk).first()


def with_health_state(qs: QuerySet[Directory], *, state: str | None = None) -> QuerySet[Directory]:
    """`qs` with its health rows and each directory's state as `health_state` (the rule of
    directories.activity.rendering.health_state_of, in SQL), only those in `state` when given."""
    qs = qs.select_related("scim_health").annotate(
        health_state=Case(
            When(deactivated=True, then=Value(HealthState.DEACTIVATED.value)),
            default=Coalesce(F("scim_health__state"), Value(HealthState.NEVER_CONNECTED.value)),
        )
    )
    return qs.filter(health_state=state) if state else qs
