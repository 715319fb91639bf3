"""A user's `emails_index` column: its emails in one string that a filter can search.

Each email is one entry, "\x1f<type>\x1e<value>\x1e<primary>\x1f", with type and value in their
comparison form (core.comparison) and without the two separators, which no email needs. The users'
documents write it (scim.protocol.documents.users); the filter translation searches it (scim.filter_query).
"""

from __future__ import annotations

from typing import Any

from core.comparison import comparison_key

ENTRY, FIELD = "\x1f", "\x1e"


def emails_index(emails: Any) -> str:
    """The emails_index column for a raw `emails` value (see DirectoryUser.emails_index)."""
    if not isinstance(emails, list):
        return ""
    parts = []
    for item in emails:
        if not isinstance(item, dict):
            continue
        value = item.get("value")
        if not isinstance(value, str) or not value:
            continue
        kind = item.get("type") if isinstance(item.get("type"), str) else ""
        primary = "true" if item.get("primary") in (True, "true", "True") else ""
        parts.append(f"{index_text(kind)}{FIELD}{index_text(value)}{FIELD}{primary}")
    return ENTRY + ENTRY.join(parts) + ENTRY if parts else ""


def index_text(value: str) -> str:
    """`value` as the index holds it: its comparison form, without the separators."""
    return comparison_key(value).replace(ENTRY, "").replace(FIELD, "")
