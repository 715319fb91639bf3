"""Roster's own limits on the request line and the headers, checked before any handler runs.

SCIM filters travel in the query string and a real request carries a dozen short headers, so a request
line or a header field of more than 8 KiB, or more than 64 header fields, is a client bug or an attack.
Such a request is refused here, in the format of the surface it was meant for (an identity provider or
an API client parses JSON, not an HTML page): SCIM error JSON under /api/scim/, the `{data, error}`
envelope under /api/v1 and /auditlog, one line of plain text elsewhere. Every refusal carries an
`X-Request-Id` and gets one log line (logger `roster.requests`, WARNING) that never quotes the request
(its query string may hold personal data).

These limits sit below the web server's own hard ones, so that everything between the two gets Roster's
answer; docs/decisions.md ("Over-long requests") lists both. What this sees is what granian hands
the WSGI application: the path percent-decoded (measured here re-encoded, as a client sends it), the
query string as sent, one `HTTP_*` key per header name (repeated fields joined with commas, so a
repeated field counts once in the number of fields and with all its values in the length).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

import orjson

from config.errorpages import surface
from core.requestid import HEADER, request_id_new
from scim.protocol.errors import ScimError

logger = logging.getLogger("roster.requests")

# Bytes of the request line (`GET /path?query HTTP/1.1`) and of one header field (`Name: value`).
REQUEST_LINE_MAX = 8190
HEADER_FIELD_MAX = 8190
HEADER_FIELDS_MAX = 64

# What a client may send unescaped in a path (RFC 3986 §3.3, pchar and "/"): the rest counts as %XX.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
# The two headers that reach the environ without the HTTP_ prefix (PEP 3333).
_UNPREFIXED = {"CONTENT_TYPE": "Content-Type", "CONTENT_LENGTH": "Content-Length"}
_REASONS = {414: "414 URI Too Long", 431: "431 Request Header Fields Too Large"}
# granian starts every environ from a copy of the process environment (CGI style): an HTTP_* variable
# of the process is not a header the client sent.
_PROCESS_HTTP_KEYS = frozenset(key for key in os.environ if key.startswith("HTTP_"))


def request_line_length(environ: dict[str, Any]) -> int:
    """The length of the request line as the client sent it, give or take escapes it did not need."""
    target = len(quote(environ.get("PATH_INFO", "").encode("latin-1", "replace"), safe=_PATH_SAFE))
    query = environ.get("QUERY_STRING", "")
    if query:
        target += 1 + len(query)
    return len(environ.get("REQUEST_METHOD", "")) + 1 + target + 1 + len(environ.get("SERVER_PROTOCOL", "HTTP/1.1"))


def refusal(environ: dict[str, Any]) -> tuple[int, str] | None:
    """(status, message) when the request is past one of the limits, else None."""
    if request_line_length(environ) > REQUEST_LINE_MAX:
        return 414, f"The request line is longer than {REQUEST_LINE_MAX} bytes."
    fields = 0
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            if key in _PROCESS_HTTP_KEYS:
                continue
            name_length = len(key) - 5
        elif key in _UNPREFIXED:
            name_length = len(_UNPREFIXED[key])
        else:
            continue
        fields += 1
        if name_length + 2 + len(value) > HEADER_FIELD_MAX:
            return 431, f"A request header field is longer than {HEADER_FIELD_MAX} bytes."
    if fields > HEADER_FIELDS_MAX:
        return 431, f"The request has more than {HEADER_FIELDS_MAX} header fields."
    return None


def refusal_response(status: int, message: str, path: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """The WSGI status, headers and body of a refusal in the format of `path`'s surface."""
    kind = surface(path)
    if kind == "scim":
        content_type, body = "application/scim+json", orjson.dumps(ScimError(status, message).body())
    elif kind == "envelope":
        content_type, body = (
            "application/json",
            orjson.dumps({"data": None, "error": {"message": message, "code": status}}),
        )
    else:
        content_type, body = "text/plain; charset=utf-8", message.encode() + b"\n"
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        # The connection carried a request the server would not read in full: the client starts afresh.
        ("Connection", "close"),
        (HEADER, request_id_new()),
    ]
    return _REASONS[status], headers, body


def refuse(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
    """The refusal, answered, when the request is past the limits above; None to serve it."""
    refused = refusal(environ)
    if refused is None:
        return None
    status, message = refused
    status_line, headers, body = refusal_response(status, message, environ.get("PATH_INFO", ""))
    # The client's X-Request-Id is not trusted on a request refused for its headers: a new id ties the
    # answer to this line.
    logger.warning(
        "request refused: %s",
        message,
        extra={"status": status, "request_id": headers[-1][1], "method": environ.get("REQUEST_METHOD", "")},
    )
    start_response(status_line, headers)
    return [body]
