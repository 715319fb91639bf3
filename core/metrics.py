"""Roster's Prometheus metrics (contract §7.1): the families, one small function per thing counted, and
the exposition that GET /metrics serves.

Counted where it happens, by the layer that knows it: SCIM requests in the SCIM adapter
(scim/http/views.py), other HTTP requests in config.requestscope, events recorded and delivery
attempts in webhooks, admin login failures in adminauth.throttle, rate-limit refusals in core.ratelimit.
Read at scrape time instead, from the database, by the /metrics view (operations.views): the outbox
backlog and the last sweep.

Label values are only ever bounded, non-personal words: directory types, HTTP methods, resource
types, status classes, route patterns (never a path), event types, outcome and error classes. Never a
directory id (unbounded), an email, a user name or anything from a request's body or query.

Nothing is recorded while METRICS_TOKEN is unset: /metrics then answers 404, and the hot path pays
one settings lookup. prometheus-client is imported on first use, not with this module, because its
multiprocess mode is chosen at its import from PROMETHEUS_MULTIPROC_DIR, which the web server and
the Celery worker set once they start (core.metricsdir).
"""

from __future__ import annotations

import platform
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import django
from django.conf import settings

from core import metricsdir
from core.version import VERSION

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# roster_build_info reports VERSION (core.version); ROSTER_REVISION (e.g. a git commit, set by the
# deployment) tells builds of one version apart.

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Seconds. A SCIM or REST request takes milliseconds; the upper buckets catch a database or lock wait.
REQUEST_BUCKETS = (0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# One delivery attempt: a receiver's answer, up to WEBHOOK_TIMEOUT (10 s by default).
DELIVERY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# From the change's commit to its attempt: milliseconds normally, minutes through a broker outage.
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)


def enabled() -> bool:
    return bool(settings.METRICS_TOKEN)


class _Families:
    """Every family this process records into. Made once, on first use (see the module docstring)."""

    def __init__(self) -> None:
        import prometheus_client
        from prometheus_client import CollectorRegistry, Counter, Histogram

        # The `_created` series say when a process made a child: noise for a node of several processes
        # (multiprocess mode never exports them, and single-process exports should read the same).
        prometheus_client.disable_created_metrics()
        # The mode prometheus-client chose as it was imported (now): files for the node, or this process's
        # memory. Fixed for the process, whatever the environment says later.
        self.multiprocess = metricsdir.process_writes_files()
        self.registry = registry = CollectorRegistry()
        self.scim_requests = Counter(
            "roster_scim_requests",
            "SCIM requests answered, by directory type, method, resource type and status class.",
            ["directory_type", "method", "resource", "status_class"],
            registry=registry,
        )
        self.scim_seconds = Histogram(
            "roster_scim_request_duration_seconds",
            "Time to answer a SCIM request, from its environ to its body, by directory type, method, resource type.",
            ["directory_type", "method", "resource"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.http_requests = Counter(
            "roster_http_requests",
            "Requests answered by Django's handler (REST API, admin API, portal, probes), by surface, route "
            "pattern, method and status.",
            ["surface", "route", "method", "status"],
            registry=registry,
        )
        self.http_seconds = Histogram(
            "roster_http_request_duration_seconds",
            "Time to answer a request through Django's handler, by surface and route pattern.",
            ["surface", "route"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.events_recorded = Counter(
            "roster_webhook_events_recorded",
            "Webhook events committed to the outbox, by event type.",
            ["event_type"],
            registry=registry,
        )
        self.deliveries = Counter(
            "roster_webhook_deliveries",
            "Webhook events closed, by outcome: delivered or failed (one attempt each; error_class names the "
            "failure), dropped (never sent on purpose) or worker_lost (attempt interrupted).",
            ["outcome", "error_class"],
            registry=registry,
        )
        self.delivery_seconds = Histogram(
            "roster_webhook_delivery_duration_seconds",
            "Time of one delivery attempt, by outcome (delivered or failed).",
            ["outcome"],
            buckets=DELIVERY_BUCKETS,
            registry=registry,
        )
        self.lag_seconds = Histogram(
            "roster_webhook_lag_seconds",
            "Seconds from an event's commit to the start of its delivery attempt.",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.rate_limited = Counter(
            "roster_rate_limited_requests",
            "Requests refused with 429 by a rate limit (contract §4.5), by surface: scim (per directory, its "
            "token endpoint included) or rest (per API key).",
            ["surface"],
            registry=registry,
        )
        self.login_failures = Counter(
            "roster_admin_login_failures",
            "Failed admin credentials (admin API root token or admin token, portal sign-in).",
            registry=registry,
        )
        # Children by label values: prometheus-client's labels() takes a lock and builds a key each time.
        self.children: dict[tuple[Any, ...], Any] = {}


_made: _Families | None = None
_making = threading.Lock()


def _families() -> _Families:
    global _made
    if _made is None:
        with _making:  # the first records may come from several threads at once (webhook drains)
            if _made is None:
                _made = _Families()
    return _made


def _child(family_name: str, labels: tuple[str, ...]) -> Any:
    families = _families()
    key = (family_name, *labels)
    child = families.children.get(key)
    if child is None:
        child = families.children[key] = getattr(families, family_name).labels(*labels)
    return child


def _method(method: str) -> str:
    return method if method in _METHODS else "OTHER"


# --- what is counted -------------------------------------------------------------------------------------


def scim_request(*, directory_type: str, method: str, resource: str, status: int, seconds: float) -> None:
    """One SCIM request answered. `directory_type` is the authenticated directory's type, else
    "unauthenticated"; `resource` a resource type of the route table or "other"."""
    if not enabled():
        return
    method = _method(method)
    _child("scim_requests", (directory_type, method, resource, f"{status // 100}xx")).inc()
    _child("scim_seconds", (directory_type, method, resource)).observe(seconds)


def http_request(*, surface: str, route: str, method: str, status: int, seconds: float) -> None:
    """One request answered through Django's handler; `route` is the URL pattern, never the path."""
    if not enabled():
        return
    _child("http_requests", (surface, route, _method(method), str(status))).inc()
    _child("http_seconds", (surface, route)).observe(seconds)


def events_recorded(event_types: Iterable[str]) -> None:
    """Events committed to the outbox (called after the commit)."""
    if not enabled():
        return
    for event_type in event_types:
        _child("events_recorded", (event_type,)).inc()


def delivery_attempted(*, delivered: bool, error_class: str, seconds: float, lag: float | None) -> None:
    """One event's single attempt; `lag` from its commit to the attempt's start, when known."""
    if not enabled():
        return
    outcome = "delivered" if delivered else "failed"
    _child("deliveries", (outcome, "" if delivered else error_class or "Unknown")).inc()
    _child("delivery_seconds", (outcome,)).observe(seconds)
    if lag is not None:
        _families().lag_seconds.observe(max(0.0, lag))


def deliveries_closed(*, outcome: str, reason: str, count: int = 1) -> None:
    """Events closed without an attempt of their own: `dropped` (not sent on purpose) or `worker_lost`."""
    if not enabled() or count <= 0:
        return
    _child("deliveries", (outcome, reason)).inc(count)


def rate_limited(*, surface: str) -> None:
    """One request refused by a rate limit (core.ratelimit); `surface` is scim or rest."""
    if not enabled():
        return
    _child("rate_limited", (surface,)).inc()


def login_failure() -> None:
    if not enabled():
        return
    _families().login_failures.inc()


# --- the exposition --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gauge:
    """A value read at scrape time (from the database), published as a gauge family."""

    name: str
    documentation: str
    samples: Sequence[tuple[dict[str, str], float]] = field(default_factory=tuple)


def build_labels() -> dict[str, str]:
    return {
        "version": VERSION,
        "revision": settings.ROSTER_REVISION or "unknown",
        "python_version": platform.python_version(),
        "django_version": django.get_version(),
    }


class _Source:
    """A collector over whatever yields metric families (prometheus-client's registry interface)."""

    def __init__(self, collect: Any) -> None:
        self.collect = collect


def exposition(gauges: Sequence[Gauge] = (), *, base: Path | None = None) -> bytes:
    """The text exposition of this node: the counters and histograms of every server process of the node
    (multiprocess mode: the files under `base`, METRICS_DIR by default) or of this process alone, then
    build info and `gauges`."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    if base is not None or _families().multiprocess:
        folder = Path(base if base is not None else settings.METRICS_DIR)
        registry.register(_Source(lambda: MultiProcessCollector.merge(metricsdir.node_files(folder), accumulate=True)))
    else:
        registry.register(_Source(_families().registry.collect))

    def scraped() -> Iterable[Any]:
        info = GaugeMetricFamily("roster_build_info", "Roster's version and runtime.", labels=list(build_labels()))
        info.add_metric(list(build_labels().values()), 1)
        yield info
        for gauge in gauges:
            labels = sorted({name for sample_labels, _ in gauge.samples for name in sample_labels})
            family = GaugeMetricFamily(gauge.name, gauge.documentation, labels=labels)
            for sample_labels, value in gauge.samples:
                family.add_metric([sample_labels.get(name, "") for name in labels], value)
            yield family

    registry.register(_Source(scraped))
    return generate_latest(registry)
