"""The SCIM request processor: authenticate, parse, route through the table, answer.

`process` takes one `ScimRequest` (scim/request.py) from either HTTP entry (scim/http/views.py)
or the embedding API (scim/api.py), with the route the entry found for it in the route table
(scim/routes.py), and returns `{"status": int, "data": dict | None}`; the HTTP adapter turns that
into bytes. A request costs one directory lookup (and what its URL names, its first read) until its
secret has been checked (scim/authentication.py); its body, PATCH operations and filter are parsed only
afterwards, and only then do a missing route (404) and a method the route lacks (405) answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
from django.db import transaction

from directories.models import Directory
from scim.authentication import UNAUTHORIZED, Seen, authenticate
from scim.protocol.errors import ScimError, invalid_syntax, invalid_value, not_found
from scim.protocol.inputs import check_document, check_query, text_ok
from scim.request import ScimRequest

MAX_BODY_BYTES = 1024 * 1024

Result = dict[str, Any]
Callback = Callable[[dict[str, Any]], None]


def process(
    req: ScimRequest,
    callback: Callback | None = None,
    *,
    seen: Seen | None = None,
    admit: Callable[[Directory], None] | None = None,
) -> Result:
    """Process one SCIM request, from the embedding API or either HTTP entry (scim.http.views); returns
    {"status": int, "data": dict | None} (and "version", the version of the one resource answered, which
    the HTTP entries send as ETag), and calls `callback` as `scim_request` documents. `seen`, when
    given, learns what `authenticate` found; `admit`, when given, is called with the directory once the
    credential matched, before anything else is read (the HTTP entries' rate limit, scim/http/limits.py),
    and may raise a ScimError (429) that answers instead."""
    route, method = req.route, req.method
    try:
        if not text_ok(req.directory_id):
            raise ScimError(401, UNAUTHORIZED)  # cannot name a directory: the one 401 of every auth failure
        target = route.methods.get(method) if route is not None else None
        # Authenticate first: before it, a request costs the directory lookup (and what its URL names),
        # never the parsing of its body or filter.
        read = target.first_read(req) if target is not None and target.first_read is not None else None
        directory = authenticate(req.directory_id, req.secret, read=read, seen=seen)
        if admit is not None:
            admit(directory)
        if not isinstance(req.query, dict):
            raise invalid_value("query must be an object.")
        check_query(req.query)
        if route is None:
            raise not_found()
        if target is None:
            raise ScimError(405, f"{method} is not allowed here; use {route.allow}.")
        if not text_ok(req.resource_id):
            raise not_found()  # no id holds a NUL or a lone surrogate
        body = _body(req.body) if target.body else None
        outcome = target.handler(directory, req, body, read)
    except ScimError as exc:
        return {"status": exc.status, "data": exc.body()}
    if callback is not None and outcome.events:
        events = outcome.events
        # After commit (or at once when no transaction is open): the callback sees committed changes only.
        transaction.on_commit(lambda: [callback(event) for event in events])
    result: Result = {"status": outcome.status, "data": outcome.data}
    if outcome.version is not None:
        result["version"] = outcome.version  # the ETag header of the HTTP entries
    return result


def _body(body: Any) -> Any:
    """The document of a route that takes a body: bytes or text over HTTP (parsed here), or what an
    embedding caller passed (checked by the same input gate); 400 when there is none (or it is `null`)."""
    if isinstance(body, bytes | str):
        body = parse_json(body)
    elif body is not None:
        check_document(body)
    if body is None:
        raise invalid_syntax("The request body is empty.")
    return body


def parse_json(raw: bytes | str) -> Any:
    """Parse a request body: 413 above 1 MiB, 400 for anything that is not clean JSON or cannot be
    stored (scim.protocol.inputs)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_BODY_BYTES:
        raise ScimError(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    if not raw.strip():
        raise invalid_syntax("The request body is empty.")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        value = _json_fallback(raw, exc)
        check_document(value)
        return value
    # What orjson read holds no lone surrogate, and a NUL only through its escape (see document_problem).
    check_document(value, texts=b"\\u0000" in raw)
    return value


def _json_fallback(raw: bytes, exc: Exception) -> Any:
    """orjson refuses a lone surrogate escape ("\\ud800") and numbers past a double, which are valid JSON
    that cannot be stored: the standard library reads them so that the input gate reports them as
    invalidValue, as it does a NUL. Anything it cannot read either is invalidSyntax."""

    def not_json(constant: str) -> Any:
        raise ValueError(constant)  # NaN and Infinity are not JSON

    try:
        return json.loads(raw, parse_constant=not_json)
    except (ValueError, RecursionError):
        raise invalid_syntax("The request body is not valid JSON (UTF-8).") from exc
