"""Reads on the webhook delivery log, always scoped by directory (STYLE: selectors do every read)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from directories.models import Directory
from webhooks.models import WebhookDelivery


def delivery_list(*, directory: Directory, failed: bool | None = None) -> QuerySet[WebhookDelivery]:
    """The directory's delivery attempts, newest first; `failed=True` keeps only failed ones."""
    qs = WebhookDelivery.objects.filter(directory=directory)
    if failed is not None:
        qs = qs.filter(delivered=not failed)
    return qs.order_by("-created_at", "-id")


def delivery_get(*, directory: Directory, delivery_id: Any) -> WebhookDelivery | None:
    """One attempt of this directory; None for an unknown id, a malformed one, or another directory's."""
    try:
        pk = uuid.UUID(str(delivery_id))
    except (ValueError, TypeError, AttributeError):
        return None
    return WebhookDelivery.objects.filter(directory=directory, pk=pk).first()
