"""The client's address, decided one way on every surface: what the throttle of failed credentials counts,
what the audit trail and the SCIM request log record.

Behind `TRUSTED_PROXY_COUNT` reverse proxies it is the address those proxies appended to X-Forwarded-For;
without one, REMOTE_ADDR. A client-sent X-Forwarded-For is never trusted beyond the proxies' own entries, or
anyone could dodge the throttle and forge the addresses the audit trail records.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    """The client's address of a Django request (None when it is not an IP address)."""
    return client_address(request.META)


def client_address(meta: Mapping[str, Any]) -> str | None:
    """`client_ip` from a request's META (a WSGI environ): what the SCIM entry, which makes no
    HttpRequest, records in its request log."""
    remote = meta.get("REMOTE_ADDR") or None
    hops = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    if hops > 0:
        forwarded = [p.strip() for p in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if len(forwarded) >= hops:
            remote = forwarded[-hops]
    if not remote:
        return None
    return _normalized(remote)


@lru_cache(maxsize=1024)
def _normalized(address: str) -> str | None:
    """An address in its one written form (None when it is not one), remembered: every SCIM request that
    fails leaves one in the request log, and a deployment hears from a few clients (its identity
    providers, its proxies), where parsing it each time was a few µs of every such request."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None
