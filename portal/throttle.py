"""Sign-in throttling: a few failures per email (or many per address) lock sign-in for a short while.

Two counters over a sliding window:
- per email: stops password guessing against one admin, from however many addresses;
- per client address: stops one address from spraying many emails.
While either is over its limit, the password is not even checked, so a locked-out attacker learns
nothing. The lockout ends on its own once the oldest counted failure leaves the window.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from portal.models import SignInFailure

WINDOW = timedelta(minutes=5)
MAX_FAILURES_PER_EMAIL = 5
MAX_FAILURES_PER_IP = 20


def email_key(email: str) -> str:
    return (email or "").strip().lower()[:320]


def signin_lockout_seconds(*, email: str, client_ip: str | None) -> int:
    """Seconds until sign-in is allowed again for this email/address; 0 when it is allowed now."""
    since = timezone.now() - WINDOW
    waits = []
    recent = SignInFailure.objects.filter(created_at__gt=since)
    for qs, limit in (
        (recent.filter(email_key=email_key(email)), MAX_FAILURES_PER_EMAIL),
        (recent.filter(client_ip=client_ip) if client_ip else None, MAX_FAILURES_PER_IP),
    ):
        if qs is None:
            continue
        # The limit-th most recent failure: once it leaves the window the count drops below the limit.
        stamps = list(qs.order_by("-created_at").values_list("created_at", flat=True)[:limit])
        if len(stamps) >= limit:
            waits.append((stamps[-1] + WINDOW - timezone.now()).total_seconds())
    return max(0, int(max(waits, default=0)) + (1 if waits else 0))


def signin_failure_record(*, email: str, client_ip: str | None) -> None:
    with transaction.atomic():
        # Old rows are useless for throttling; pruning here keeps the table tiny without a cron job.
        SignInFailure.objects.filter(created_at__lt=timezone.now() - WINDOW * 2).delete()
        SignInFailure.objects.create(email_key=email_key(email), client_ip=client_ip)


def signin_failures_clear(*, email: str) -> None:
    """A successful sign-in forgives that email's failures (not the address's: it may be shared)."""
    SignInFailure.objects.filter(email_key=email_key(email)).delete()
