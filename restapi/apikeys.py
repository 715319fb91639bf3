"""API-key authentication of the REST API (contract §1: `Authorization: Bearer <API key>`), and who the key
is to the audit trail (`actor_of`: the one place the REST API builds its Actor)."""

from __future__ import annotations

import hmac

from django.conf import settings
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from audit.actors import Actor
from core.bearer import bearer_token
from core.clientaddress import client_ip
from directories.models import ApiKey, api_key_hash
from restapi.ratelimits import api_key_admit


def api_key_resolve(header: str | None) -> str | ApiKey | None:
    """Return the principal for an Authorization header: the env key string or the ApiKey row, else None."""
    key = bearer_token(header)
    if key is None:
        return None
    matched: str | None = None
    for configured in settings.API_KEYS:
        # Compare against every configured key, so timing does not reveal which one matched.
        if hmac.compare_digest(configured.encode(), key.encode()):
            matched = configured
    if matched is not None:
        return matched
    # Looking up by the SHA-256 digest leaks nothing useful about the key through timing.
    return ApiKey.objects.filter(key_hash=api_key_hash(key), revoked_at__isnull=True).first()


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[None, str | ApiKey]:
        principal = api_key_resolve(request.META.get("HTTP_AUTHORIZATION"))
        if principal is None:
            raise exceptions.AuthenticationFailed("Missing or invalid API key. Send Authorization: Bearer <key>.")
        api_key_admit(request, principal)  # the key's rate limit: 429 when over it
        return (None, principal)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="roster"'


def credential_name(request: Request) -> str:
    """The API key of the request as the audit trail names it: `api key <name> (<prefix>…)`, or API_KEYS
    for a key of that setting (which has no name)."""
    principal = request.auth
    return f"api key {principal.name} ({principal.prefix}…)" if isinstance(principal, ApiKey) else "API_KEYS"


def actor_of(request: Request) -> Actor:
    """Who acts on a REST request: its API key (named in the entry's details as `actor` and `credential`),
    from the client's address as every surface decides it (TRUSTED_PROXY_COUNT)."""
    name = credential_name(request)
    return Actor(name=name, via="rest-api", client_ip=client_ip(request), details={"credential": name})
