"""The client-credentials grant of a directory's OAuth client (contract §4.3, RFC 6749 §4.4).

`client_credentials_grant` takes what the token endpoint's HTTP adapter (scim/http/token_endpoint.py) read of a
request (its form parameters, and the client's credentials from an `Authorization: Basic` header) and
answers with an access token (scim/access_tokens.py), or raises `OAuthError`, an error of RFC 6749 §5.2. Checks
run in this order, the first failure answering:

1. `grant_type`: missing → invalid_request; anything but `client_credentials` → unsupported_grant_type.
   Before the client is authenticated, as oauthlib orders it: it costs nothing and tells nothing.
2. Which credentials: HTTP Basic and a form `client_secret` together → invalid_request (RFC 6749 §2.3:
   one method per request); none, or half of them → invalid_client.
3. The one throttle (adminauth.throttle, scope SCIM_OAUTH), by client address and by directory, before
   anything is looked up: 429.
4. The directory, and its client: the client id is the directory's id, the secret is compared by its
   SHA-256 digest with each of the directory's unexpired secrets in constant time (also when the
   directory is unknown or has none, which answers exactly like a wrong secret; an expired secret is a
   wrong one) → invalid_client, counted by the throttle. The secret that matched is noted as used.
5. `scope`: Roster's tokens have one scope, `scim` (every SCIM request of the directory). None asked: that
   one. Scope tokens of RFC 6749 §3.3's syntax: granted `scim`, said in the answer when it differs from
   what was asked (§5.1). Anything else → invalid_scope.
6. A deactivated directory → 403 unauthorized_client (its SCIM endpoint answers 403 too).
"""

from __future__ import annotations

import hmac
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from adminauth.throttle import SCIM_OAUTH, failure_record, failures_clear, throttle_wait_seconds
from core.crypto import secret_digest
from core.requestid import scope_directory
from directories.oauthsecrets import secrets_live
from directories.selectors import directory_get
from directories.services import scim_oauth_secret_used
from scim import access_tokens
from scim.access_tokens import access_token_grant
from scim.authentication import Seen

GRANT_TYPE = "client_credentials"
SCOPE = "scim"
# RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), space-delimited.
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*")
_SCOPE_MAX = 1024
# What a wrong client id or secret is compared with when there is nothing to compare with (an unknown
# directory, one without a client secret): a digest no secret has.
_NO_DIGEST = "-" * 64
WRONG_CLIENT = "Client authentication failed: wrong client_id or client_secret."


class OAuthError(Exception):
    """An error answer of the token endpoint (RFC 6749 §5.2): `{"error", "error_description"}`."""

    def __init__(self, status: int, error: str, description: str, *, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.retry_after = retry_after

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


def invalid_request(description: str) -> OAuthError:
    return OAuthError(400, "invalid_request", description)


def invalid_client(description: str = WRONG_CLIENT) -> OAuthError:
    """401, with a `WWW-Authenticate: Basic` challenge added by the HTTP adapter (RFC 6749 §5.2)."""
    return OAuthError(401, "invalid_client", description)


@dataclass(frozen=True)
class Credentials:
    """A client's id and secret as an `Authorization: Basic` header gave them (RFC 6749 §2.3.1), or the
    sign that the header could not be read (`readable` false)."""

    client_id: str
    secret: str = field(repr=False)
    readable: bool = True


MALFORMED_BASIC = Credentials("", "", readable=False)


@dataclass(frozen=True)
class Grant:
    access_token: str
    expires_in: int
    scope: str | None  # the scope granted, when it differs from the one asked for (RFC 6749 §5.1)

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
        }
        if self.scope is not None:
            data["scope"] = self.scope
        return data


def client_credentials_grant(
    *,
    directory_id: str,
    params: dict[str, str],
    basic: Credentials | None,
    client_ip: str | None,
    seen: Seen,
) -> Grant:
    """An access token for the OAuth client of the directory `directory_id` names (see the module
    docstring for the checks). `params`: the form's parameters, each once, none empty; `basic`: the
    credentials of a Basic header (MALFORMED_BASIC when it could not be read), None without one.
    `seen` learns the directory and whether the client authenticated, for the request's record."""
    grant_type = params.get("grant_type")
    if grant_type is None:
        raise invalid_request("grant_type is missing: send grant_type=client_credentials.")
    if grant_type != GRANT_TYPE:
        raise OAuthError(
            400, "unsupported_grant_type", "This token endpoint supports grant_type=client_credentials only."
        )
    client_id, secret = _credentials(params, basic)
    key = _directory_key(directory_id)
    wait = throttle_wait_seconds(ip=client_ip, scope=SCIM_OAUTH, directory_id=key)
    if wait:
        raise OAuthError(
            429,
            "temporarily_unavailable",
            f"Too many failed attempts; retry in {wait} seconds.",
            retry_after=wait,
        )
    directory = directory_get(directory_id=key) if key else None
    seen.looked_up, seen.directory = True, directory
    now = access_tokens.clock()
    live = secrets_live(directory.scim_oauth_secrets, now) if directory is not None else []
    # Every comparison runs every time, `&` does not short-circuit: timing does not tell an unknown
    # directory, a directory without a client secret, a wrong client id and a wrong secret apart.
    right_id = hmac.compare_digest(client_id.encode("utf-8", "surrogatepass"), (key or "-").encode())
    digest = secret_digest(_text(secret))
    matched = None
    for entry in live or [{"id": None, "hash": _NO_DIGEST}]:
        if hmac.compare_digest(digest, entry["hash"]) & (entry["id"] is not None):
            matched = entry["id"]
    if not (right_id & (matched is not None)) or directory is None or matched is None:
        failure_record(ip=client_ip, scope=SCIM_OAUTH, directory_id=key)
        raise invalid_client(_MALFORMED if basic is not None and not basic.readable else WRONG_CLIENT)
    seen.authenticated = True
    scope_directory(directory.id, directory.type)  # log lines and /metrics name it from here on
    failures_clear(ip=client_ip, scope=SCIM_OAUTH)
    if directory.deactivated:
        raise OAuthError(
            403, "unauthorized_client", "This directory is deactivated; it accepts no SCIM requests and gets no token."
        )
    granted = _scope_granted(params.get("scope"))
    issued = access_token_grant(directory=directory, secret_id=matched, now=now)
    scim_oauth_secret_used(directory=directory, secret_id=matched)
    return Grant(access_token=issued.token, expires_in=issued.expires_in, scope=granted)


_MALFORMED = (
    "Client authentication failed: the Authorization header's Basic credentials cannot be read (base64 of "
    "client_id:client_secret, each form-urlencoded, RFC 6749 §2.3.1)."
)


def _credentials(params: dict[str, str], basic: Credentials | None) -> tuple[str, str]:
    """The (client id, secret) presented: by HTTP Basic (client_secret_basic) or by the form's fields
    (client_secret_post), never both. Without a secret, nothing was tried: invalid_client, not counted."""
    posted_id, posted_secret = params.get("client_id"), params.get("client_secret")
    if basic is not None:
        if posted_secret is not None:
            raise invalid_request(
                "Send the client's credentials one way: HTTP Basic or the form's client_id and client_secret, "
                "not both (RFC 6749 §2.3)."
            )
        if basic.readable and posted_id is not None and posted_id != basic.client_id:
            raise invalid_request("The form's client_id differs from the one of the Authorization header.")
        return basic.client_id, basic.secret
    if posted_id is None or posted_secret is None:
        raise invalid_client(
            "Client authentication failed: send client_id and client_secret, as HTTP Basic or as form fields."
        )
    return posted_id, posted_secret


def _directory_key(directory_id: str) -> str | None:
    """The directory id of the URL in its canonical form (the client id), None when it is not a UUID."""
    try:
        return str(uuid.UUID(directory_id))
    except (ValueError, TypeError, AttributeError):
        return None


def _text(value: str) -> str:
    # A secret with an unpaired surrogate cannot be encoded; it is wrong anyway, and must cost the same.
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _scope_granted(asked: str | None) -> str | None:
    """The scope to state in the answer: None when none was asked or exactly `scim` was."""
    if asked is None:
        return None
    if len(asked) > _SCOPE_MAX or not _SCOPE.fullmatch(asked):
        raise OAuthError(400, "invalid_scope", "scope must be space-separated scope tokens (RFC 6749 §3.3), e.g. scim.")
    return None if asked == SCOPE else SCOPE
