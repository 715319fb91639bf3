"""Request ids: the one id that ties a response to its log lines.

An incoming `X-Request-Id` (set by a load balancer or the client) is kept when it is 1-128 characters
of letters, digits, `-`, `_` and `.`; anything else (too long, odd characters that could forge a log
line) is replaced by a new id.

A request's *scope* carries its id, and the directory it acts on once that is known, to every log
line written while it runs (core.logfilters.RequestScopeFields reads it from a context variable, so
no function has to pass it along). The HTTP entries open it (config.requestscope for Django's chain,
scim.http.views for the SCIM endpoint) and keep it in the request's WSGI environ too, so that an inner
entry reached through an outer one uses the same id instead of making a second.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator, MutableMapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

HEADER = "X-Request-Id"
ENVIRON_KEY = "HTTP_X_REQUEST_ID"
# Where the open scope is kept in the request's environ (Django's request.META is that dict).
SCOPE_KEY = "roster.request_scope"
_SANE = re.compile(r"[A-Za-z0-9._-]{1,128}")


def request_id_new() -> str:
    return uuid.uuid4().hex


def request_id_from(incoming: str | None) -> str:
    """The incoming id when it is sane, else a new one."""
    if incoming and _SANE.fullmatch(incoming):
        return incoming
    return request_id_new()


@dataclass(slots=True)
class RequestScope:
    """What every log line of one request (or one background job) carries."""

    request_id: str | None
    directory_id: str | None = None
    directory_type: str | None = None
    # Set by an entry that counted and logged the request itself (the SCIM adapter), so that an outer
    # one (Django's middleware, when SCIM falls back to Django's handler) does not do it twice.
    observed: bool = False


_current: ContextVar[RequestScope | None] = ContextVar("roster_request_scope", default=None)


def scope_current() -> RequestScope | None:
    return _current.get()


def scope_enter(environ: MutableMapping[str, Any]) -> tuple[RequestScope, Token[RequestScope | None] | None]:
    """The scope of the request whose WSGI environ this is: the one an outer entry already opened, else
    a new one (with the incoming id when it is sane), bound to this context until `scope_exit(token)`."""
    scope = environ.get(SCOPE_KEY)
    if scope is not None:
        return scope, None
    scope = RequestScope(request_id_from(environ.get(ENVIRON_KEY)))
    environ[SCOPE_KEY] = scope
    return scope, _current.set(scope)


def scope_exit(token: Token[RequestScope | None] | None) -> None:
    """Close what `scope_enter` opened (nothing when it reused an outer entry's scope)."""
    if token is not None:
        _current.reset(token)


def scope_directory(directory_id: object, directory_type: str) -> None:
    """The current request acts on this directory (known once its SCIM secret matched, for instance)."""
    scope = _current.get()
    if scope is not None:
        scope.directory_id = str(directory_id)
        scope.directory_type = directory_type


@contextlib.contextmanager
def scope_bound(*, directory_id: object = None, request_id: str | None = None) -> Iterator[RequestScope]:
    """A scope for work that is not an HTTP request (a webhook drain): its log lines name the directory."""
    scope = RequestScope(request_id, None if directory_id is None else str(directory_id))
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
