"""The REST API's rate limit (contract §4.5, core.ratelimit): API_RATE_LIMIT requests per minute per API key,
counted once the key is authenticated (restapi/apikeys.py), so a wrong key spends nobody's budget.

A refused request is answered 429 in the envelope before its view runs; every counted request's answer
carries the RateLimit header fields (core.ratelimit.HeadersMiddleware, from the verdict left on the request).
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from core import ratelimit, turns
from directories.models import ApiKey


class RateLimited(APIException):
    status_code = 429
    default_code = "rate_limited"


def api_key_admit(request: Request, principal: str | ApiKey) -> None:
    """Count one request of this API key; raise RateLimited (429) when it is over its limit."""
    name = f"key:{principal.pk}" if isinstance(principal, ApiKey) else f"env:{principal}"
    verdict = ratelimit.admit(ratelimit.rest_bucket(name), settings.API_RATE_LIMIT, surface=ratelimit.REST)
    if verdict is None:
        return
    setattr(request._request, ratelimit.REQUEST_ATTRIBUTE, verdict)
    if not verdict.allowed:
        request._request.environ[turns.REFUSED] = True  # held a moment under a flood (core.turns.Turns)
        raise RateLimited(
            f"Too many requests for this API key (its limit is {verdict.limit} per minute); "
            f"retry after {verdict.retry_after} seconds."
        )
