"""The one throttle of failed credentials: admin credentials on the admin API and the portal's sign-in
(contract §6), and setup links' tokens on the setup page (contract §3.1).

Every failure is a `LoginFailure` row: the client address, what was tried (its scope: `ADMIN` or
`SETUP_LINK`, each counted apart), and for a portal sign-in the email that was tried. While a client
address has `ADMIN_LOGIN_MAX_FAILURES` failures of one scope within `ADMIN_LOGIN_FAILURE_WINDOW_SECONDS`
(a sliding window), or the email it tries has `ADMIN_LOGIN_MAX_FAILURES_PER_EMAIL` (from any address:
password guessing against one admin), it is refused (429 on the API and the setup page, a lockout
message in the portal) until the oldest counted failure ages out. Both admin surfaces count into the
same rows, so an attacker gets one budget, not one per surface. The check runs before the root token is
compared and before any bcrypt or password work, so a throttled client can neither keep guessing nor
make the server burn CPU.

The setup page counts each unknown, expired or revoked token as a failure of its client address, and
refuses every lookup from a throttled address, valid tokens included: guessing a token (256 random
bits) stays hopeless. Counting it apart from admin credentials means a customer's IT admin reopening
old links cannot lock the admins out of the portal, nor the reverse.

The token endpoint of a directory's OAuth client (contract §4.3, scope `SCIM_OAUTH`) counts each wrong
client id or secret as a failure of the client's address and of the directory the URL names (its id in
the row's `email_key`, the account tried): an address is refused past ADMIN_LOGIN_MAX_FAILURES, a
directory past SCIM_OAUTH_MAX_FAILURES_PER_DIRECTORY from any number of addresses. The second budget is
larger: anyone who knows a directory's id can spend it, which closes that directory's token endpoint
(not its SCIM endpoint, nor the tokens already issued) until the window passes.

Rows live in the database, which every web worker and node shares; Django's default local-memory
cache would count per worker.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from adminauth.models import LoginFailure
from core import metrics

DEFAULT_MAX_FAILURES = 10
DEFAULT_MAX_FAILURES_PER_EMAIL = 5
DEFAULT_WINDOW_SECONDS = 15 * 60
DEFAULT_MAX_FAILURES_PER_DIRECTORY = 50
# What a failure was an attempt at (LoginFailure.scope): each is counted apart.
ADMIN = "admin"
SETUP_LINK = "setup-link"
SCIM_OAUTH = "scim-oauth"


def max_failures() -> int:
    return int(getattr(settings, "ADMIN_LOGIN_MAX_FAILURES", DEFAULT_MAX_FAILURES))


def max_failures_per_email() -> int:
    return int(getattr(settings, "ADMIN_LOGIN_MAX_FAILURES_PER_EMAIL", DEFAULT_MAX_FAILURES_PER_EMAIL))


def max_failures_per_directory() -> int:
    return int(getattr(settings, "SCIM_OAUTH_MAX_FAILURES_PER_DIRECTORY", DEFAULT_MAX_FAILURES_PER_DIRECTORY))


def window() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "ADMIN_LOGIN_FAILURE_WINDOW_SECONDS", DEFAULT_WINDOW_SECONDS)))


def email_key(email: str | None) -> str:
    """The form in which a tried email is counted (and looked up): trimmed, lowercased, bounded."""
    return (email or "").strip().lower()[:320]


def _ip_key(ip: str | None) -> str:
    return ip or "unknown"


def _directory_key(directory_id: str) -> str:
    return "directory:" + directory_id


def _wait(rows: QuerySet[LoginFailure], limit: int, now: object) -> float:
    """Seconds until fewer than `limit` of `rows` are in the window; 0 when already fewer."""
    recent = list(rows.order_by("-created_at").values_list("created_at", flat=True)[:limit])
    if len(recent) < limit:
        return 0.0
    # The client is free again once the limit-th most recent failure leaves the window.
    return (recent[-1] + window() - now).total_seconds()  # type: ignore[operator]


def throttle_wait_seconds(
    *, ip: str | None, email: str | None = None, scope: str = ADMIN, directory_id: str | None = None
) -> int:
    """Seconds until this client (and, when given, this email or this directory) may try again in `scope`;
    0 when not throttled."""
    now = timezone.now()
    recent = LoginFailure.objects.filter(created_at__gt=now - window(), scope=scope)
    waits = [_wait(recent.filter(client_ip=_ip_key(ip)), max_failures(), now)]
    if email:
        waits.append(_wait(recent.filter(email_key=email_key(email)), max_failures_per_email(), now))
    if directory_id:
        key = _directory_key(directory_id)
        waits.append(_wait(recent.filter(email_key=key), max_failures_per_directory(), now))
    longest = max(waits)
    return max(1, math.ceil(longest)) if longest > 0 else 0


def failure_record(
    *, ip: str | None, email: str | None = None, scope: str = ADMIN, directory_id: str | None = None
) -> None:
    now = timezone.now()
    subject = _directory_key(directory_id) if directory_id else email_key(email)
    LoginFailure.objects.create(client_ip=_ip_key(ip), email_key=subject, scope=scope, created_at=now)
    if scope == ADMIN:
        metrics.login_failure()  # a setup link's token or an OAuth client's secret is not a login
    # Pruning on the write path keeps the table small without a periodic job.
    LoginFailure.objects.filter(created_at__lte=now - window()).delete()


def failures_clear(*, ip: str | None = None, email: str | None = None, scope: str = ADMIN) -> None:
    """A success forgets earlier typos: a root-token login (or a token endpoint's client) those of its
    address; a portal sign-in those of its email only (an address may be shared by many people)."""
    if ip is not None:
        LoginFailure.objects.filter(client_ip=_ip_key(ip), scope=scope).delete()
    if email:
        LoginFailure.objects.filter(email_key=email_key(email), scope=scope).delete()
