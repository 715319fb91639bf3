"""Ids as the selectors take them: a UUID, or anything whose text may be one (a path segment, a query value).
Something that is not a UUID matches no row, so it reads as None, never as an error."""

from __future__ import annotations

import uuid
from typing import Any


def uuid_or_none(value: Any) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None
