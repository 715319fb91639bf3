"""GET /readyz and GET /metrics (contract §7.1). /healthz (directories.health) stays the liveness probe.

/readyz tells a load balancer whether this node can serve: its database answers, and its broker when
one is configured (without it no webhook would be requested). It answers in the shape of /healthz:
200 `{"status": "ok", "database": "ok", "broker": "ok"}` (`"not configured"` without a broker), or 503
with `"status": "unavailable"`, each failing part marked `"unreachable"` and listed in `failing`, and
`Retry-After`. Nothing is cached: each probe asks again, so it says what is true now on this node.

/metrics is the Prometheus text exposition of the node (core.metrics), plus what only the database
knows, read at scrape time: the outbox backlog, the last sweep, and the directories whose deprovision guard
tripped (contract §4.2) with the changes each holds. Every node reports the same
database-wide values (aggregate them with max(), not sum()). `Authorization: Bearer <METRICS_TOKEN>`,
compared in constant time: 401 without it or with a wrong one, 404 while METRICS_TOKEN is unset.
"""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from core import metrics
from core.bearer import bearer_token
from core.logfilters import mark_logged
from core.outage import RETRY_AFTER_SECONDS
from directories.guard.selectors import guard_tripped_directories
from operations.probes import broker_probe, database_probe
from webhooks.selectors import heartbeat_get, outbox_backlog
from webhooks.services import SWEEP

logger = logging.getLogger("roster.operations")


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    probes = {"database": database_probe()}
    if settings.CELERY_BROKER_URL:
        probes["broker"] = broker_probe(settings.CELERY_BROKER_URL)
    failing = [part for part, probe in probes.items() if not probe.ok]
    body: dict[str, object] = {"status": "unavailable" if failing else "ok"}
    body.update({part: "ok" if probe.ok else "unreachable" for part, probe in probes.items()})
    body.setdefault("broker", "not configured")
    if not failing:
        return JsonResponse(body)
    body["failing"] = failing
    # The class of each failure goes to the log only: a public probe should not learn such details.
    logger.error("readyz: not ready: %s", ", ".join(f"{part} unreachable ({probes[part].detail})" for part in failing))
    mark_logged(request)  # this line is the one line of this 503
    response = JsonResponse(body, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    expected = settings.METRICS_TOKEN
    if not expected:
        return HttpResponse("Not found.\n", status=404, content_type="text/plain; charset=utf-8")
    presented = bearer_token(request.META.get("HTTP_AUTHORIZATION")) or ""
    if not hmac.compare_digest(presented.encode("utf-8", "surrogatepass"), expected.encode()):
        response = HttpResponse(
            "Send Authorization: Bearer <METRICS_TOKEN>.\n", status=401, content_type="text/plain; charset=utf-8"
        )
        response["WWW-Authenticate"] = 'Bearer realm="Roster metrics"'
        return response
    return HttpResponse(metrics.exposition(database_gauges()), content_type=metrics.CONTENT_TYPE)


def database_gauges() -> list[metrics.Gauge]:
    """What only the database knows, read now. A database that does not answer leaves them out and says
    so (roster_database_up 0): the process's own counters are still worth a scrape."""
    try:
        backlog = outbox_backlog()
        sweep = heartbeat_get(name=SWEEP)
        tripped = [(d.id, d.held_count) for d in guard_tripped_directories()]
    except DatabaseError as exc:
        logger.warning("metrics: database gauges left out (%s)", type(exc).__name__)
        return [metrics.Gauge("roster_database_up", "1 when the database answered this scrape.", [({}, 0)])]
    now = timezone.now()
    oldest_age = (now - backlog.oldest_pending_at).total_seconds() if backlog.oldest_pending_at else 0.0
    gauges = [
        metrics.Gauge("roster_database_up", "1 when the database answered this scrape.", [({}, 1)]),
        metrics.Gauge(
            "roster_webhook_outbox_events",
            "Outbox events not closed yet, by state: pending (waiting for their attempt) or sending (attempt under "
            "way, or its worker died). The same on every node.",
            [({"state": "pending"}, backlog.pending), ({"state": "sending"}, backlog.sending)],
        ),
        metrics.Gauge(
            "roster_webhook_outbox_oldest_pending_age_seconds",
            "How long the longest-waiting pending outbox event has waited, since it was recorded or resent "
            "(0 when none is pending). The same on every node.",
            [({}, max(0.0, oldest_age))],
        ),
    ]
    gauges += [
        metrics.Gauge(
            "roster_guard_tripped_directories",
            "Directories whose deprovision guard tripped: changes wait for a person to approve or discard them. The "
            "same on every node.",
            [({}, len(tripped))],
        ),
        metrics.Gauge(
            "roster_guard_held_changes",
            "Changes held by tripped deprovision guards, all directories together (manage.py doctor names the "
            "directories). The same on every node.",
            [({}, sum(held for _directory_id, held in tripped))],
        ),
    ]
    if sweep is not None:
        gauges.append(
            metrics.Gauge(
                "roster_webhook_sweep_last_run_timestamp_seconds",
                "Unix time of the last sweep (celery beat runs it every 30 s). The same on every node.",
                [({}, sweep.at.timestamp())],
            )
        )
    return gauges
