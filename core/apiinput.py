"""Reading what a client sends to the REST and admin APIs: query values, paging and JSON bodies.

Both surfaces answer bad input with a 400 in the `{data, error}` envelope that names the parameter or
field, before anything reaches the database: a NUL or an unpaired surrogate in a query value or a
body string, or an integer outside 64 bits, would otherwise surface as a database or encoder error
(a 500). Everything here is plain parsing, no DRF serializer: it runs on every request.

The rules the OpenAPI document states (restapi/openapi.py and the openapi_* modules beside it) are enforced here:
- `pageOffset` and `pageLimit` are decimal digits only (no sign, no spaces), at most 2**63 - 1, the
  64-bit range every Roster surface uses for integers. Larger values are a 400, never silently capped:
  a client asking for offset 10**30 has a bug worth seeing. Within the range, `pageLimit` above 1000
  is served as 1000, and an offset beyond any real table simply gives an empty page.
- Booleans in the query are `true` or `false`, exactly; a choice is one of its values, exactly.
- A parameter that is present is read, even when empty: `?pageOffset=` is not an integer, so a 400,
  as the document's types say (a client filling a URL template leaves empty ones out).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from django.core.exceptions import RequestDataTooBig

from core.errors import RosterError, ValidationFailed
from core.text import INT_MAX, json_problem, text_problem

if TYPE_CHECKING:  # only named in annotations: the Celery worker (directories.guard) imports this module
    from rest_framework.request import Request

PAGE_LIMIT_DEFAULT = 100
PAGE_LIMIT_MAX = 1000
PAGE_NUMBER_MAX = INT_MAX
# Beyond any real table, and far below the 64-bit limit where SQLite and PostgreSQL reject OFFSET.
PAGE_OFFSET_CEILING = 10**15
# An HTTP status in a filter (`status=404`): the range HTTP defines.
HTTP_STATUS_MIN, HTTP_STATUS_MAX = 100, 599
# Request bodies of both APIs are flat objects; a deeper document is not one a client meant to send.
BODY_MAX_DEPTH = 16

_BOOLEANS = {"true": True, "false": False}
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def query_check(request: Request) -> None:
    """Refuse any query parameter, name or value, that cannot be stored or compared as text. Views call
    this once (ApiView/AdminView.initial), so each parameter reader below can trust its input."""
    for name, values in request.query_params.lists():
        problem = text_problem(name)
        if problem:
            raise ValidationFailed(f"A query parameter name {problem}.")
        for value in values:
            problem = text_problem(value)
            if problem:
                raise ValidationFailed(f"The query parameter {name} {problem}.", field=name)


def query_text(request: Request, name: str) -> str:
    """The parameter's value without surrounding spaces; "" when absent."""
    return request.query_params.get(name, "").strip()


def query_required(request: Request, name: str) -> str:
    value = query_text(request, name)
    if not value:
        raise ValidationFailed(f"The query parameter {name} is required.", field=name)
    return value


def query_boolean(request: Request, name: str) -> bool | None:
    """`true` or `false`; None when absent (an empty value is neither, so a 400)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw not in _BOOLEANS:
        raise ValidationFailed(f"{name} must be true or false.", field=name)
    return _BOOLEANS[raw]


def query_choice(request: Request, name: str, choices: tuple[str, ...]) -> str | None:
    """One of `choices`, exactly; None when absent (an empty value is none of them, so a 400)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw not in choices:
        raise ValidationFailed(f"{name} must be one of: {', '.join(choices)}.", field=name)
    return raw


def query_nonempty(request: Request, name: str, *, max_length: int = 512) -> str | None:
    """The parameter's value without surrounding spaces; None when absent, a 400 when empty or too long."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    value = raw.strip()
    if not value or len(value) > max_length:
        raise ValidationFailed(f"{name} must be 1 to {max_length} characters.", field=name)
    return value


def query_uuid(request: Request, name: str) -> uuid.UUID | None:
    """A UUID in its canonical text form (8-4-4-4-12 hex digits, the OpenAPI `uuid` format); None when
    absent, a 400 otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not _UUID.fullmatch(raw):
        raise ValidationFailed(f"{name} must be an id (a UUID).", field=name)
    return uuid.UUID(raw)


def query_datetime(request: Request, name: str) -> datetime | None:
    """An ISO 8601 date-time with a time zone (`Z` or an offset); None when absent, a 400 otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    moment = None
    if _DATE_TIME.fullmatch(raw):  # RFC 3339 (the OpenAPI `date-time` format), which fromisoformat reads
        try:
            # In UTC, as the database compares it: 9999-12-31T23:59:59-23:59 is past year 9999 there.
            moment = datetime.fromisoformat(raw.upper()).astimezone(UTC)
        except (ValueError, OverflowError):
            moment = None  # e.g. month 13, an offset past 24 hours, a moment past year 9999 in UTC
    if moment is None:
        raise ValidationFailed(
            f"{name} must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T12:00:00Z.", field=name
        )
    return moment


def query_integer(request: Request, name: str, *, minimum: int, maximum: int) -> int | None:
    """An integer from `minimum` to `maximum` (0 <= minimum), decimal digits only; None when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    # The length first, as for paging: int() of thousands of digits is slow (and past 4300 an error).
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19 and minimum <= int(raw) <= maximum):
        raise ValidationFailed(f"{name} must be an integer from {minimum} to {maximum}.", field=name)
    return int(raw)


def query_http_status(request: Request, name: str = "status") -> int | None:
    return query_integer(request, name, minimum=HTTP_STATUS_MIN, maximum=HTTP_STATUS_MAX)


def _page_number(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    # isdigit() alone also accepts other scripts' digits ("٣"); isascii() keeps it to 0-9.
    if not (raw.isascii() and raw.isdigit()):
        raise ValidationFailed(f"{name} must be a non-negative integer.", field=name)
    # The length test first: int() of a few thousand digits is slow, and past 4300 a ValueError.
    if len(raw.lstrip("0")) > 19 or int(raw) > PAGE_NUMBER_MAX:
        raise ValidationFailed(f"{name} must be at most {PAGE_NUMBER_MAX}.", field=name)
    return int(raw)


def page_bounds(request: Request) -> tuple[int, int]:
    """(offset, limit) from `pageOffset` (default 0) and `pageLimit` (default 100, served as at most 1000)."""
    offset = min(_page_number(request, "pageOffset", 0), PAGE_OFFSET_CEILING)
    limit = min(_page_number(request, "pageLimit", PAGE_LIMIT_DEFAULT), PAGE_LIMIT_MAX)
    return offset, limit


def position_bounds(request: Request, *, default_limit: int, max_limit: int) -> tuple[int, int]:
    """(after, limit) of a read by position, such as the changes feed: `after` (default 0) and `limit`
    (default `default_limit`, at least 1, served as at most `max_limit`), digits only and at most
    2**63 - 1 like the paging numbers. Unlike `pageLimit`, a limit of 0 is a 400: a poller asking for
    nothing has a bug worth seeing."""
    after = _page_number(request, "after", 0)
    limit = _page_number(request, "limit", default_limit)
    if limit < 1:
        raise ValidationFailed("limit must be at least 1.", field="limit")
    return after, min(limit, max_limit)


def json_body(request: Request) -> Any:
    """The request body as JSON. An empty body is `{}`; the Content-Type is not required to say JSON,
    so `curl -d '{...}'` (which sends form encoding) works as people expect."""
    # Django's request.body turns Content-Length into an int unguarded: a value that is not decimal
    # digits ("abc", "1e3", "0x10", "-1") would escape as a ValueError, a 500. granian refuses such
    # requests itself, other servers and proxies may pass them on.
    length = request.META.get("CONTENT_LENGTH") or "0"
    if not (length.isascii() and length.isdigit()):
        raise ValidationFailed("The Content-Length header must be a non-negative decimal number.")
    try:
        raw = request.body
    except RequestDataTooBig:
        raise RosterError("The request body is too large.", status=413) from None
    if not raw.strip():
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # Also what orjson says about a lone surrogate escape ("\ud800") or a number beyond a double.
        raise ValidationFailed("The request body is not valid JSON.") from None
    problem = json_problem(data, max_depth=BODY_MAX_DEPTH)
    if problem:
        raise ValidationFailed(problem)
    return data


def json_object_body(request: Request) -> dict[str, Any]:
    data = json_body(request)
    if not isinstance(data, dict):
        raise ValidationFailed("The body must be a JSON object.")
    return data


def fields_known(data: dict[str, Any], fields: Iterable[str], *, verb: str = "Accepted") -> None:
    """Refuse a body naming a field not in `fields` with a 400 that names it and lists the known ones, so a
    misspelt option is never silently ignored. `verb` introduces the list ("Accepted", "Updatable")."""
    known = list(fields)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValidationFailed(f"Unknown field(s): {', '.join(unknown)}. {verb}: {', '.join(known)}.", field=unknown[0])
