"""The one time format of every machine-readable surface (REST, SCIM, webhooks, admin API): ISO 8601 in
UTC with milliseconds and a `Z`, as JavaScript's `Date.toISOString()` writes it, so every client parses
the same shape whatever surface a time came from."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_utc_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else iso_utc(moment)
