"""SCIM list paging (RFC 7644 §3.4.2.4): `startIndex` and `count` from a GET list's query or a
SearchRequest body, bounded so that no value reaches the database as an OFFSET or LIMIT it cannot hold."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from scim.protocol.errors import invalid_value

DEFAULT_COUNT = 100
# 2**53: past the end of any directory, and an integer every JSON client reads exactly.
MAX_START_INDEX = 2**53
HUGE = 10**18
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _int_param(query: dict[str, Any], name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise invalid_value(f"{name} must be an integer.")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    # A query parameter is plain ASCII digits (int() would also take "1_000" and other scripts' digits).
    if not _INTEGER.fullmatch(text):
        raise invalid_value(f"{name} must be an integer.")
    if len(text.lstrip("+-").lstrip("0")) > 18:
        # Past every bound `paging` applies: no need to build (or let the database see) the number itself.
        return -HUGE if text.startswith("-") else HUGE
    return int(text)


def paging(query: dict[str, Any]) -> tuple[int, int]:
    """(startIndex, count) as RFC 7644 §3.4.2.4 reads them: startIndex below 1 means 1, a negative count
    means 0, count is capped at SCIM_MAX_RESULTS. A startIndex past MAX_START_INDEX is read as
    MAX_START_INDEX, which is past the end of any directory: an empty page, never an OFFSET the
    database cannot hold (and a startIndex in the response that every JSON client reads exactly)."""
    start = _int_param(query, "startIndex")
    count = _int_param(query, "count")
    start = 1 if start is None or start < 1 else min(start, MAX_START_INDEX)
    count = DEFAULT_COUNT if count is None else max(count, 0)
    return start, min(count, settings.SCIM_MAX_RESULTS)
