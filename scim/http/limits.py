"""The SCIM side of the rate limits (contract §4.5, core.ratelimit): each directory's budget, its token
endpoint's requests included.

Two checks, both in the HTTP adapter's path (scim/http/views.py), never in the embedding API:

- `early_refusal`, before anything of the request is read or looked up: while the directory's bucket is
  already full, as this process sees it, the request is refused from memory (no database query), so a
  flooding directory's refusals stay cheap for the requests queued behind them. It counts nothing.
- `Admission`, once the credential matched (the processor calls it right after `authenticate`; the token
  endpoint's grant is admitted after it authenticated the client, its token dropped when refused): the
  request is counted, and refused when the bucket is full. Only authenticated requests count, so nobody can
  spend a directory's budget by knowing its id (docs/decisions.md, "Rate limits").

A refusal answers 429 in the route's format (SCIM error JSON, or RFC 6749's for the token endpoint) with
Retry-After; every answer under a limit carries the RateLimit header fields.
"""

from __future__ import annotations

import orjson

from core import ratelimit
from core.ratelimit import Verdict
from directories.models import Directory
from scim.protocol.errors import ScimError

TOKEN_ERROR = "temporarily_unavailable"


def refused_detail(verdict: Verdict) -> str:
    return (
        f"Too many requests for this directory (its limit is {verdict.limit} per minute); "
        f"retry after {verdict.retry_after} seconds."
    )


def early_refusal(directory_id: str) -> Verdict | None:
    """The refusal of a request to this directory while its bucket is full; None otherwise."""
    return ratelimit.refusal(ratelimit.scim_bucket(directory_id), surface=ratelimit.SCIM)


def scim_refused(verdict: Verdict) -> ScimError:
    return ScimError(429, refused_detail(verdict))


def token_refused_body(verdict: Verdict) -> bytes:
    """The token endpoint's 429 (RFC 6749 §5.2's shape, the error its throttle of failed clients uses)."""
    return orjson.dumps({"error": TOKEN_ERROR, "error_description": refused_detail(verdict)})


class Admission:
    """Counts one authenticated request against its directory's budget and keeps the verdict for the
    answer's headers."""

    __slots__ = ("verdict",)

    def __init__(self) -> None:
        self.verdict: Verdict | None = None

    def count(self, directory: Directory) -> Verdict | None:
        self.verdict = ratelimit.admit(
            ratelimit.scim_bucket(directory.id),
            ratelimit.scim_per_minute(directory.scim_rate_limit),
            surface=ratelimit.SCIM,
        )
        return self.verdict

    def __call__(self, directory: Directory) -> None:
        """The processor's `admit`: raises the 429 when the directory is over its limit."""
        verdict = self.count(directory)
        if verdict is not None and not verdict.allowed:
            raise scim_refused(verdict)

    @property
    def refused(self) -> bool:
        return self.verdict is not None and not self.verdict.allowed
