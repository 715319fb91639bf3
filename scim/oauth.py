"""The client-credentials grant of a directory's OAuth client (contract §4.3, RFC 6749 §4.4), on oauthlib.

oauthlib's `BackendApplicationServer` runs the grant: it reads the form, checks `grant_type`, asks the
`DirectoryClientValidator` below to authenticate the client and to accept the grant and the scope, has
Roster's self-contained access token (scim/access_tokens.py) made as its Bearer token, and writes the RFC
6749 answer (§5.1), or the error (§5.2). What Roster adds, as oauthlib's hooks:

1. Before anything (a `pre_token` validator): a body that is not clean form encoding (a malformed
   percent-escape, escaped bytes that are not UTF-8, a NUL or another character no text may hold), more
   than MAX_PARAMETERS parameters, or any parameter sent twice (RFC 6749 §3.2; oauthlib itself refuses
   only `grant_type` and `scope` twice) → invalid_request.
2. `grant_type` (oauthlib): missing → invalid_request; anything but `client_credentials` →
   unsupported_grant_type. Before the client is authenticated: it costs nothing and tells nothing.
3. `authenticate_client`: which credentials (HTTP Basic, read here: oauthlib leaves Basic to the
   validator, or the form's `client_id` and `client_secret`; both → invalid_request, none or half →
   invalid_client); the one throttle (adminauth.throttle, scope SCIM_OAUTH), by client address and by
   directory, before anything is looked up (429); the directory, and its client: the client id is the
   directory's id, the secret is compared by its SHA-256 digest with each unexpired secret of the
   directory in constant time (also when the directory is unknown or has none, which answers exactly like
   a wrong secret) → invalid_client, counted by the throttle.
4. `validate_grant_type`: a deactivated directory → 403 unauthorized_client (its SCIM endpoint answers
   403 too).
5. `validate_scopes`: Roster's tokens have one scope, `scim`. None asked: that one. Scope tokens of RFC
   6749 §3.3's syntax: granted `scim`, said in the answer when it differs from what was asked (§5.1, a
   token modifier). Anything else → invalid_scope.
6. The token (a `post_token` validator, then oauthlib's BearerToken): issued with the secret that
   matched, its `expires_in` the token's own; `save_token` notes the secret as used.

Every error is an oauthlib `OAuth2Error`; `client_credentials_grant` raises the one oauthlib answered, so
the HTTP adapter (scim/http/token_endpoint.py) has one kind of error to write.
"""

from __future__ import annotations

import hmac
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes

from oauthlib.common import Request
from oauthlib.oauth2 import BackendApplicationServer, RequestValidator
from oauthlib.oauth2.rfc6749 import errors

from adminauth.throttle import SCIM_OAUTH, failure_record, failures_clear, throttle_wait_seconds
from core.crypto import secret_digest
from core.requestid import scope_directory
from core.text import text_problem
from directories.models import Directory
from directories.oauthsecrets import secrets_live
from directories.selectors import directory_get
from directories.services import scim_oauth_secret_used
from scim import access_tokens
from scim.access_tokens import Issued, access_token_grant
from scim.authentication import Seen

GRANT_TYPE = "client_credentials"
SCOPE = "scim"
MAX_PARAMETERS = 64
# RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), space-delimited.
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*")
_SCOPE_MAX = 1024
# What a wrong client id or secret is compared with when there is nothing to compare with (an unknown
# directory, one without a client secret): a digest no secret has.
_NO_DIGEST = "-" * 64
WRONG_CLIENT = "Client authentication failed: wrong client_id or client_secret."
CHALLENGE = 'Basic realm="Roster SCIM token endpoint"'
# The errors oauthlib raises without a description get these (every error answer has one).
_DESCRIPTIONS = {
    "unsupported_grant_type": "This token endpoint supports grant_type=client_credentials only.",
    "invalid_request": "The request is not a valid client credentials grant.",
    "invalid_client": WRONG_CLIENT,
    "invalid_scope": "scope must be space-separated scope tokens (RFC 6749 §3.3), e.g. scim.",
}
_MALFORMED = (
    "Client authentication failed: the Authorization header's Basic credentials cannot be read (base64 of "
    "client_id:client_secret, each form-urlencoded, RFC 6749 §2.3.1)."
)


class InvalidClient(errors.InvalidClientError):
    """invalid_client, always a 401 with the `Basic` challenge of the scheme the endpoint takes (RFC 6749
    §5.2; oauthlib's own challenge names Bearer)."""

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": CHALLENGE}


class TooManyFailures(errors.OAuth2Error):
    error = "temporarily_unavailable"
    status_code = 429

    def __init__(self, wait: int) -> None:
        super().__init__(description=f"Too many failed attempts; retry in {wait} seconds.")
        self.wait = wait

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.wait)}


class Deactivated(errors.UnauthorizedClientError):
    status_code = 403


def invalid_request(description: str, status: int = 400) -> errors.OAuth2Error:
    return errors.InvalidRequestError(description=description, status_code=status)


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
    """A successful answer (RFC 6749 §5.1), as oauthlib wrote it."""

    body: dict[str, Any]


@dataclass
class _Client:
    client_id: str


class DirectoryClientValidator(RequestValidator):
    """oauthlib's questions about one request to one directory's token endpoint (the module docstring)."""

    def __init__(self, *, directory_id: str, basic: Credentials | None, client_ip: str | None, seen: Seen) -> None:
        self.key = _directory_key(directory_id)
        self.basic = basic
        self.client_ip = client_ip
        self.seen = seen
        self.directory: Directory | None = None
        self.secret_id = ""
        self.asked: str | None = None

    def client_authentication_required(self, request: Request, *args: Any, **kwargs: Any) -> bool:
        return True

    def authenticate_client(self, request: Request, *args: Any, **kwargs: Any) -> bool:
        client_id, secret = self._credentials(request)
        key = self.key
        wait = throttle_wait_seconds(ip=self.client_ip, scope=SCIM_OAUTH, directory_id=key)
        if wait:
            raise TooManyFailures(wait)
        directory = directory_get(directory_id=key) if key else None
        self.seen.looked_up, self.seen.directory = True, directory
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
            failure_record(ip=self.client_ip, scope=SCIM_OAUTH, directory_id=key)
            raise InvalidClient(
                description=_MALFORMED if self.basic is not None and not self.basic.readable else WRONG_CLIENT
            )
        self.seen.authenticated = True
        scope_directory(directory.id, directory.type)  # log lines and /metrics name it from here on
        failures_clear(ip=self.client_ip, scope=SCIM_OAUTH)
        self.directory, self.secret_id = directory, matched
        request.client = _Client(client_id)
        return True

    def _credentials(self, request: Request) -> tuple[str, str]:
        """The (client id, secret) presented: by HTTP Basic (client_secret_basic) or by the form's fields
        (client_secret_post), never both. Without a secret, nothing was tried: invalid_client, not counted."""
        posted_id, posted_secret = request.client_id or None, request.client_secret or None
        basic = self.basic
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
            raise InvalidClient(
                description="Client authentication failed: send client_id and client_secret, as HTTP Basic or as "
                "form fields."
            )
        return posted_id, posted_secret

    def validate_grant_type(self, client_id: str, grant_type: str, client: Any, request: Request, *a: Any) -> bool:
        """Whether this client may use the grant: not while its directory is deactivated."""
        if self.directory is not None and self.directory.deactivated:
            raise Deactivated(
                description="This directory is deactivated; it accepts no SCIM requests and gets no token."
            )
        return True

    def get_default_scopes(self, client_id: str, request: Request, *args: Any, **kwargs: Any) -> list[str]:
        return [SCOPE]

    def validate_scopes(self, client_id: str, scopes: list[str], client: Any, request: Request, *a: Any) -> bool:
        asked = request.scope or None
        if asked is not None and (len(asked) > _SCOPE_MAX or not _SCOPE.fullmatch(asked)):
            raise errors.InvalidScopeError(description=_DESCRIPTIONS["invalid_scope"])
        self.asked = asked
        request.scopes = [SCOPE]
        return True

    def issue(self, request: Request) -> None:
        """The post_token hook: the access token, from the secret that matched."""
        assert self.directory is not None  # authenticate_client passed
        request.issued = access_token_grant(directory=self.directory, secret_id=self.secret_id)

    def said_scope(self, token: dict[str, Any]) -> dict[str, Any]:
        """The token modifier: `scope` only when the one granted differs from the one asked (§5.1)."""
        if self.asked is None or self.asked == SCOPE:
            token.pop("scope", None)
        else:
            token["scope"] = SCOPE
        return token

    def save_token(self, token: dict[str, Any], request: Request, *args: Any, **kwargs: Any) -> None:
        """Nothing is stored (the token is self-contained); the secret that obtained it is noted as used."""
        assert self.directory is not None
        scim_oauth_secret_used(directory=self.directory, secret_id=self.secret_id)


def client_credentials_grant(
    *, directory_id: str, body: str, basic: Credentials | None, client_ip: str | None, seen: Seen
) -> Grant:
    """An access token for the OAuth client of the directory `directory_id` names (see the module
    docstring), or the OAuth2Error oauthlib answered. `body`: the form, ASCII text; `basic`: the
    credentials of a Basic header (MALFORMED_BASIC when it could not be read), None without one. `seen`
    learns the directory and whether the client authenticated, for the request's record."""
    validator = DirectoryClientValidator(directory_id=directory_id, basic=basic, client_ip=client_ip, seen=seen)
    server = BackendApplicationServer(
        validator,
        token_generator=lambda request: _issued(request).token,
        token_expires_in=lambda request: _issued(request).expires_in,
    )
    grant = server.credentials_grant
    grant.custom_validators.pre_token.append(_form_strict)
    grant.custom_validators.post_token.append(validator.issue)
    grant.register_token_modifier(validator.said_scope)
    headers, text, status = server.create_token_response("/oauth/token", http_method="POST", body=body)
    answer = json.loads(text)
    if status == 200:
        return Grant(answer)
    raise _error(answer, status, headers)


def _issued(request: Request) -> Issued:
    return request.issued  # type: ignore[no-any-return]


class Answered(errors.OAuth2Error):
    """An error oauthlib answered, as it wrote it: its code, description, status and headers (those of the
    error it raised: a 401's challenge, a 429's Retry-After), for the HTTP adapter to write once."""

    def __init__(self, error: str, description: str, status: int, headers: dict[str, str]) -> None:
        super().__init__(description=description, status_code=status)
        self.error = error
        self._headers = headers

    @property
    def headers(self) -> dict[str, str]:
        return self._headers


# Written by the HTTP adapter on every answer.
_COMMON_HEADERS = {"content-type", "cache-control", "pragma"}


def _error(answer: dict[str, Any], status: int, headers: dict[str, str]) -> errors.OAuth2Error:
    """The error behind an error answer of oauthlib, with a description when it had none."""
    code = str(answer.get("error", "invalid_request"))
    description = answer.get("error_description") or _DESCRIPTIONS.get(code, "The request was refused.")
    own = {name: value for name, value in headers.items() if name.lower() not in _COMMON_HEADERS}
    return Answered(code, description, status, own)


def _form_strict(request: Request) -> None:
    """The pre_token hook: a body that oauthlib could not read as a form, or that holds what no text may,
    too many parameters, or one sent twice → invalid_request (RFC 6749 §3.2)."""
    body = request.body or ""
    if body and request.decoded_body is None:
        raise invalid_request("The body is not valid form encoding (RFC 6749 Appendix B).")
    for piece in body.split("&"):
        for part in piece.split("=", 1):
            try:
                text = unquote_to_bytes(part.replace("+", " ")).decode("utf-8")
            except UnicodeDecodeError:
                raise invalid_request(
                    "The body is not valid form encoding: escaped bytes that are not UTF-8."
                ) from None
            problem = text_problem(text)
            if problem:
                raise invalid_request(f"The body is not valid form encoding: a value {problem}.")
    if len(request.decoded_body or ()) > MAX_PARAMETERS:
        raise invalid_request(f"The body has more than {MAX_PARAMETERS} parameters.")
    if request.duplicate_params:
        name = request.duplicate_params[0]
        raise invalid_request(f"The parameter {name[:64]!r} is sent more than once (RFC 6749 §3.2).")


def _directory_key(directory_id: str) -> str | None:
    """The directory id of the URL in its canonical form (the client id), None when it is not a UUID."""
    try:
        return str(uuid.UUID(directory_id))
    except (ValueError, TypeError, AttributeError):
        return None


def _text(value: str) -> str:
    # A secret with an unpaired surrogate cannot be encoded; it is wrong anyway, and must cost the same.
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
