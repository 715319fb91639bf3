"""Throttling of failed admin credentials per client address (SPEC §6, issue 5).

A client that fails `ADMIN_LOGIN_MAX_FAILURES` times within `ADMIN_LOGIN_FAILURE_WINDOW_SECONDS`
(sliding window) is answered 429 until its oldest failure in the window ages out. The check runs
before the root token is compared and before any bcrypt work, so a throttled client can neither
keep guessing nor make the server burn CPU. Failures live in the database (adminauth.LoginFailure),
which every gunicorn worker shares; Django's default local-memory cache would count per worker.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone

from adminauth.models import LoginFailure

DEFAULT_MAX_FAILURES = 10
DEFAULT_WINDOW_SECONDS = 15 * 60


def _max_failures() -> int:
    return int(getattr(settings, "ADMIN_LOGIN_MAX_FAILURES", DEFAULT_MAX_FAILURES))


def _window() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "ADMIN_LOGIN_FAILURE_WINDOW_SECONDS", DEFAULT_WINDOW_SECONDS)))


def client_ip(request: HttpRequest) -> str | None:
    """The client's address. Behind `TRUSTED_PROXY_COUNT` reverse proxies, the address those proxies
    appended to X-Forwarded-For; without one, REMOTE_ADDR (a client-sent X-Forwarded-For is not
    trusted, or anyone could dodge the throttle and forge the audit trail's addresses)."""
    remote = request.META.get("REMOTE_ADDR") or None
    hops = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    if hops > 0:
        forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if len(forwarded) >= hops:
            remote = forwarded[-hops]
    if not remote:
        return None
    try:
        return str(ipaddress.ip_address(remote))
    except ValueError:
        return None


def _key(ip: str | None) -> str:
    return ip or "unknown"


def throttle_wait_seconds(*, ip: str | None) -> int:
    """Seconds until this client may try again; 0 when it is not throttled. One indexed query."""
    now = timezone.now()
    limit = _max_failures()
    recent = list(
        LoginFailure.objects.filter(client_ip=_key(ip), created_at__gt=now - _window())
        .order_by("-created_at")
        .values_list("created_at", flat=True)[:limit]
    )
    if len(recent) < limit:
        return 0
    # The client is free again once the limit-th most recent failure leaves the window.
    remaining = (recent[-1] + _window() - now).total_seconds()
    return max(1, math.ceil(remaining))


def failure_record(*, ip: str | None) -> None:
    now = timezone.now()
    LoginFailure.objects.create(client_ip=_key(ip), created_at=now)
    # Pruning on the write path keeps the table small without a periodic job.
    LoginFailure.objects.filter(created_at__lte=now - _window()).delete()


def failures_clear(*, ip: str | None) -> None:
    """A successful root-token login forgets the client's earlier typos."""
    LoginFailure.objects.filter(client_ip=_key(ip)).delete()
