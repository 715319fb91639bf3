"""What each SCIM request leaves for the operator (contract §7.1): a count and a duration for /metrics,
and one log line for every write and every 4xx.

Called by the adapter (scim/http/views.py, `scim_answer`), the one point both HTTP entries pass
through, once the answer is known. This is the hot path of the service: one settings lookup and two
cached metric children while METRICS_TOKEN is set, one log call for a write or a 4xx (what that costs a
request: bench/README.md, "Other measured costs"). A 5xx is logged by the adapter's error funnel already.
The line names the method, the resource type and the status, never the path, query or body (ids,
filter values and attributes are personal data); the request and directory ids come with it
(core.logfilters.RequestScopeFields).
"""

from __future__ import annotations

import logging
import time
from contextvars import Token

from core import metrics
from core.requestid import RequestScope, scope_exit

logger = logging.getLogger("roster.requests")

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def scim_observed(
    scope: RequestScope,
    token: Token[RequestScope | None] | None,
    *,
    method: str,
    resource_type: str,
    status: int,
    started: float,
) -> None:
    """Count and log one answered SCIM request, then close its scope (opened by `scope_enter`).
    `resource_type` is a route's (scim.routes), "-" for the directory's root or "other": a client
    cannot make up label values."""
    try:
        seconds = time.perf_counter() - started
        metrics.scim_request(
            directory_type=scope.directory_type or "unknown",
            method=method,
            resource=resource_type,
            status=status,
            seconds=seconds,
        )
        if status < 500 and (status >= 400 or method in WRITES):
            logger.info(
                "SCIM %s %s answered %d in %.1f ms",
                method,
                resource_type,
                status,
                seconds * 1000,
                extra={"status": status, "method": method, "resource": resource_type},
            )
        scope.observed = True
    finally:
        scope_exit(token)
