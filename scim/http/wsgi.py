"""The SCIM endpoint as a plain WSGI application, for the requests that identity providers send.

Django's request handler (request and response objects, the middleware chain, URL resolving, response
logging) costs a SCIM request about as much CPU as its database lookup (kept for speed: bench/README.md,
"Code kept for speed", "SCIM without Django's handler"). Here a SCIM request goes
from the environ to `scim.http.views.scim_answer` and back to the server:

- Routing: `scim.routes.scim_path_args`, by the patterns scim/http/urls.py is built from, on the path
  decoded the way Django decodes it.
- The host check (ALLOWED_HOSTS, what CommonMiddleware does first): Django's own `get_host()`, run
  once per distinct Host header and remembered.
- The headers SecurityMiddleware would add (nosniff, Referrer-Policy, Cross-Origin-Opener-Policy), and
  Content-Length as CommonMiddleware sets it.
- `request_started` and `request_finished`, so Django manages the database connection (CONN_MAX_AGE,
  a connection broken during the request) exactly as for any other request; not for a request its
  directory's rate limit refuses from memory, which touches no database. While only Django's own
  receivers listen to them (the usual case), what those do is done here directly, each connection
  walked once (`_request_started`, `_request_finished`); any other receiver gets the signals as sent.
  The request is recorded (scim.http.activity: in memory, written later by a thread of its own) and
  finished before its body is handed to the server, as a one-item list: granian sends a list in one
  piece, while any other iterable goes through its streaming path, which asks Python for each chunk and
  then calls close(). That path cost a refused request about a tenth more web CPU (`bench.single --op
  throttled_429`, alternating).

Whatever this does not cover goes to the Django handler unchanged (`fallback`): a path the patterns do
not match, a Host that is not allowed (Django answers 400 and logs it), a request without a Host
header, and every request when the settings ask for more than the above: SCIM_MIDDLEWARE other than
the default pair, SECURE_SSL_REDIRECT, HSTS, PREPEND_WWW, APPEND_SLASH or DISALLOWED_USER_AGENTS.
`tests/scim/test_wsgi.py` checks that both give the same status, headers and body.
"""

from __future__ import annotations

import http
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.exceptions import DisallowedHost
from django.core.handlers.base import reset_urlconf
from django.core.handlers.wsgi import WSGIRequest, get_path_info
from django.db import close_old_connections, connections, reset_queries
from django.urls import set_urlconf

from core.turns import REFUSED
from scim.http.limits import early_refusal
from scim.http.request import content_length
from scim.http.views import scim_answer
from scim.routes import scim_path_args

# The SCIM_MIDDLEWARE whose work this module does itself (config/settings.py).
# The request scope (request id, /metrics counts, log lines) is opened by scim.http.views itself.
COVERED_MIDDLEWARE = [
    "config.requestscope.RequestScopeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
_REASONS = {status.value: status.phrase for status in http.HTTPStatus}
_HOSTS_REMEMBERED = 64


def covered() -> bool:
    """Whether the settings ask for nothing beyond what this module does (else: the Django handler)."""
    return (
        list(settings.SCIM_MIDDLEWARE) == COVERED_MIDDLEWARE
        and not settings.SECURE_SSL_REDIRECT
        and not settings.SECURE_HSTS_SECONDS
        and not settings.PREPEND_WWW
        and not settings.APPEND_SLASH
        and not settings.DISALLOWED_USER_AGENTS
    )


def security_headers() -> list[tuple[str, str]]:
    """SecurityMiddleware's response headers that do not depend on the request (HSTS does: not covered)."""
    headers = []
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append(("X-Content-Type-Options", "nosniff"))
    policy = settings.SECURE_REFERRER_POLICY
    if policy:
        values = policy.split(",") if isinstance(policy, str) else policy
        headers.append(("Referrer-Policy", ",".join(v.strip() for v in values)))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(("Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    return headers


class ScimApplication:
    """WSGI application for paths under PREFIX; `fallback` (Django's handler) answers what it does not cover."""

    def __init__(self, fallback: Callable[..., Iterable[bytes]]) -> None:
        self.fallback = fallback
        self._hosts: dict[tuple[Any, ...], bool] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        args = scim_path_args(get_path_info(environ)) if covered() else None
        if args is None or not self._host_allowed(environ):
            return self.fallback(environ, start_response)
        # A directory over its rate limit is refused from memory (scim.http.limits): no Django request is
        # started for it, as nothing of it touches the database; the flood it belongs to is cheaper for the
        # requests queued behind it.
        refused = early_refusal(args["directory_id"])
        started = refused is None
        if started:
            _request_started(environ)
        try:
            answer = scim_answer(environ, lambda: _body(environ), **args, refused=refused)
            headers = [*answer.headers, *security_headers(), ("Content-Length", str(len(answer.body)))]
            start_response(f"{answer.status} {_REASONS.get(answer.status, 'Unknown Status Code')}", headers)
        except BaseException:
            if started:
                _request_finished()
            raise
        try:
            answer.exchange.record()
        finally:
            if started:
                _request_finished()
        if answer.status == 429:
            environ[REFUSED] = True  # held a moment under a flood (core.turns.Turns)
        return [answer.body]

    def _host_allowed(self, environ: dict[str, Any]) -> bool:
        """Django's `get_host()` check, remembered per Host (and X-Forwarded-Host) value and settings."""
        host = environ.get("HTTP_HOST")
        if not host:
            return False  # Django works it out from SERVER_NAME/PORT; rare enough to leave to it
        key = (
            host,
            environ.get("HTTP_X_FORWARDED_HOST"),
            tuple(settings.ALLOWED_HOSTS),
            settings.DEBUG,
            settings.USE_X_FORWARDED_HOST,
        )
        allowed = self._hosts.get(key)
        if allowed is None:
            try:
                WSGIRequest(environ).get_host()
                allowed = True
            except DisallowedHost:
                allowed = False
            if len(self._hosts) >= _HOSTS_REMEMBERED:
                self._hosts.clear()  # many distinct Host values: start over rather than grow
            self._hosts[key] = allowed
        return allowed


# Django's own receivers of the request signals (for any sender), each independent of the others.
_DJANGO_STARTED = (reset_queries, close_old_connections)
_DJANGO_FINISHED = (close_old_connections, close_caches, reset_urlconf)
_ANY_SENDER = id(None)


def _only_djangos(signal: signals.Signal, receivers: tuple[Callable[..., Any], ...]) -> bool:
    """Whether `receivers` alone listen to `signal` (read from Django's receiver list, whose entries start
    with (id of the receiver, id of the sender)); False when that list is not as expected."""
    try:
        listed = {entry[0] for entry in signal.receivers}
    except Exception:  # noqa: BLE001 - another Django's list: send the signal
        return False
    return len(signal.receivers) == len(receivers) and listed == {(id(r), _ANY_SENDER) for r in receivers}


def _request_started(environ: dict[str, Any]) -> None:
    """`request_started`: with only Django's receivers, their work (each connection's query log cleared,
    then the connection closed if unusable or past CONN_MAX_AGE) in one walk of the connections. The
    signal dispatch and the second walk were about half of the two signals' CPU (`bench.single --op
    get_404` pays them on every request)."""
    if not _only_djangos(signals.request_started, _DJANGO_STARTED):
        signals.request_started.send(sender=ScimApplication, environ=environ)
        return
    for connection in connections.all(initialized_only=True):
        connection.queries_log.clear()
        connection.close_if_unusable_or_obsolete()


def _request_finished() -> None:
    """`request_finished`: with only Django's receivers, their work (connections closed if unusable or
    past CONN_MAX_AGE, the caches' close, the thread's URLconf back to the setting's), without the
    signal's dispatch."""
    if not _only_djangos(signals.request_finished, _DJANGO_FINISHED):
        signals.request_finished.send(sender=ScimApplication)
        return
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
    caches.close_all()
    set_urlconf(None)


def _body(environ: dict[str, Any]) -> bytes:
    """The body as Django's WSGIRequest reads it: CONTENT_LENGTH bytes, none when that is missing or invalid."""
    size = content_length(environ)
    return environ["wsgi.input"].read(size) if size > 0 else b""
