"""What the SCIM HTTP entries record of each request once it has been answered (contract §4.1): its
directory's health counters, and an entry of the directory's request log for a request that failed
(4xx/5xx) or while the directory's `log_scim_requests` is on.

`Exchange.record` runs once the answer is built: scim.http.wsgi calls it just before handing the body
to the server, scim.http.views.ScimResponse when the server closes it. It never raises, never changes the answer,
and makes no database round trip of its own: the counters and the entry (masked and capped here) go to
the process's recorder (directories.activity.recorder), whose background thread writes them in batches,
outside any request's transaction; an entry that cannot be written costs a log line. Only requests
naming an existing directory are recorded (a request refused before its secret was looked at, a 413
or 415, costs one lookup to know), and a 401 is the same bytes whether or not the directory exists.
No entry is kept for a 503 (the database is down; the counters still count it when the directory was
known), nor by the embedding API (docs/decisions.md). A 429 of the rate limit is always kept, and counted
as throttled (directories.activity.state), without a lookup: the limiter refuses only directories it knows.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from django.core.handlers.wsgi import get_path_info

from core.clientaddress import client_address
from directories.activity import recorder
from directories.activity.state import (
    AUTHENTICATED,
    DEACTIVATED,
    REFUSED,
    THROTTLED,
    UNCHECKED,
    moment_of,
    secret_mark,
)
from directories.selectors import directory_get
from scim.authentication import Seen
from scim.protocol.masking import query_text, request_body_text, response_body_text, text_capped
from scim.routes import PREFIX

logger = logging.getLogger("roster.scim")

PATH_LIMIT = 2048
USER_AGENT_LIMIT = 512


class Exchange:
    """One SCIM request and its answer, as much as recording them needs. Built by scim_answer for every
    request (cheap: nothing here is computed before `record`)."""

    __slots__ = (
        "at_us",
        "directory_id",
        "environ",
        "latency_ms",
        "detail",
        "method",
        "problem_type",
        "request_body",
        "request_id",
        "response_body",
        "seen",
        "started",
        "status",
        "throttled",
    )

    def __init__(self, environ: Mapping[str, Any], method: str, directory_id: str, request_id: str) -> None:
        self.at_us = time.time_ns() // 1000
        self.started = time.perf_counter()
        self.environ = environ
        self.method = method
        self.directory_id = directory_id
        self.request_id = request_id
        self.seen = Seen()
        self.request_body = b""  # as read, also when the request was refused after reading it (415)
        self.status = 0
        self.response_body = b""
        # What an error answer said: a SCIM error's scimType and detail (RFC 7644 §3.12), or the token
        # endpoint's error and error_description (RFC 6749 §5.2).
        self.problem_type = ""
        self.detail = ""
        self.latency_ms = 0
        # Refused by the directory's rate limit (429, scim.http.limits): before its secret was checked too,
        # on a directory the limiter already knows, so recording it costs no lookup.
        self.throttled = False

    def answered(self, status: int, body: bytes, problem_type: Any = None, detail: Any = None) -> None:
        """The answer: its status, its body as the log may keep it, and what an error said."""
        self.status, self.response_body = status, body
        self.problem_type, self.detail = str(problem_type or ""), str(detail or "")
        self.latency_ms = int((time.perf_counter() - self.started) * 1000)

    def record(self) -> None:
        """Record the request (see the module docstring). Never raises."""
        try:
            self._record()
        except Exception as exc:  # noqa: BLE001 - recording must never fail the request (e.g. the 413's lookup)
            logger.warning(
                "SCIM activity: request not recorded (%s) request_id=%s", type(exc).__name__, self.request_id
            )

    def _record(self) -> None:
        seen, status = self.seen, self.status
        directory = seen.directory
        if self.throttled:
            directory_id = directory.id if directory is not None else uuid.UUID(self.directory_id)
            recorder.log(directory_id, self.log_entry())
            recorder.record(directory_id, at=self.at_us, status=status, kind=THROTTLED)
            return
        if directory is None:
            if seen.looked_up or status < 400 or status == 503:
                return  # no such directory, or nothing to say about one
            # Refused before its secret was looked at (body too large, content type): is it a directory's?
            directory = directory_get(directory_id=self.directory_id)
            if directory is None:
                return
            kind = UNCHECKED
        elif not seen.authenticated:
            kind = REFUSED
        elif directory.deactivated:
            kind = DEACTIVATED
        else:
            kind = AUTHENTICATED
        if status != 503 and (status >= 400 or directory.log_scim_requests):
            # Queued before the counters: once a flush has counted a request, it has written its entry too.
            recorder.log(directory.id, self.log_entry())
        mark = secret_mark(seen.secret) if kind == AUTHENTICATED and seen.secret else None
        recorder.record(directory.id, at=self.at_us, status=status, kind=kind, mark=mark)

    def log_entry(self) -> dict[str, Any]:
        """What the request log keeps of this request: the field values of its ScimLogEntry."""
        request_body, request_truncated = request_body_text(self.request_body)
        response_body, response_truncated = response_body_text(self.response_body)
        return {
            "at": moment_of(self.at_us),
            "method": self.method[:16],
            "path": text_capped(self._path(), PATH_LIMIT),
            "query": query_text(self.environ.get("QUERY_STRING", "")),
            "status": self.status,
            "scim_type": self.problem_type[:32],
            "detail": text_capped(self.detail),
            "latency_ms": self.latency_ms,
            "request_id": self.request_id,
            "client_ip": client_address(self.environ),
            "user_agent": text_capped(str(self.environ.get("HTTP_USER_AGENT", "")), USER_AGENT_LIMIT),
            "request_body": request_body,
            "request_truncated": request_truncated,
            "response_body": response_body,
            "response_truncated": response_truncated,
        }

    def _path(self) -> str:
        """The path relative to the directory's SCIM base, e.g. "/Users/<id>" (decoded as Django does)."""
        path = get_path_info(self.environ)
        base = PREFIX + self.directory_id
        return (path[len(base) :] if path.startswith(base) else path) or "/"
