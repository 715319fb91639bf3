"""The HTTP adapter of the token endpoint of a directory's OAuth client (contract §4.3): `POST
<SCIM base>/oauth/token`, a form in and RFC 6749's JSON out, never SCIM's.

The route table (scim/routes.py) routes the path here, and scim/http/views.py (`scim_answer`, the
adapter of both HTTP entries) hands the request over, after opening its scope and before counting and
recording its answer as for any SCIM request (its health counters and request log: a wrong client
secret is an authentication failure of the directory). This module checks what oauthlib does not, calls
the route's handler (scim/oauth.py: the grant, run by oauthlib) and writes the answer:

- a method the route lacks: 405 with the route's `Allow`; a body over MAX_BODY_BYTES: 413, not read;
- the body must be `application/x-www-form-urlencoded` (UTF-8) in ASCII: any other type, JSON included,
  and bytes outside ASCII are invalid_request (the rest of the form's strictness is scim/oauth.py's);
- `Authorization: Basic` carries client_id:client_secret, each form-urlencoded then base64 (§2.3.1),
  read here because oauthlib leaves it to its validator; one that cannot be read is invalid_client;
  another scheme is not client authentication and is ignored;
- every answer is `application/json` with `Cache-Control: no-store` and `Pragma: no-cache` (§5.1), every
  error `{"error", "error_description"}` (§5.2) from an oauthlib `OAuth2Error`, with its headers (a 401's
  `WWW-Authenticate: Basic`, a 429's `Retry-After`); a database that cannot be reached is a 503
  temporarily_unavailable, anything unexpected a 500 server_error with the request id, never a traceback.

The request log keeps the form with its client_secret masked, and the answer with its access_token masked.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple
from urllib.parse import unquote_to_bytes

import orjson
from django.utils.http import parse_header_parameters
from oauthlib.common import urlencoded
from oauthlib.oauth2.rfc6749.errors import OAuth2Error

from core.clientaddress import client_address
from core.outage import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS
from core.text import text_problem
from scim.http.activity import Exchange
from scim.http.request import content_length
from scim.oauth import MALFORMED_BASIC, Credentials, Grant, invalid_request
from scim.protocol.masking import MASK, masked_form
from scim.request import Route

logger = logging.getLogger("roster.scim")

CONTENT_TYPE = "application/json"
FORM = "application/x-www-form-urlencoded"
MAX_BODY_BYTES = 16 * 1024
NO_STORE = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_UNESCAPED = re.compile("[^" + re.escape("".join(sorted(urlencoded))) + "]")


class TokenAnswer(NamedTuple):
    status: int
    body: bytes
    headers: list[tuple[str, str]]  # the Content-Type first
    logged: bytes  # the body as the request log may keep it: no access token
    error: str  # RFC 6749 §5.2 error code, "" on success
    description: str


def token_answer(
    environ: Mapping[str, Any],
    read_body: Callable[[], bytes],
    method: str,
    directory_id: str,
    route: Route,
    exchange: Exchange,
    request_id: str,
) -> TokenAnswer:
    """The answer to one request to the token endpoint; never raises. `read_body` reads the body (at most
    once); `exchange` is the request's record, told what was seen and the body it may keep."""
    headers = [("Content-Type", CONTENT_TYPE), *NO_STORE]
    try:
        grant = _grant(environ, read_body, method, directory_id, route, exchange)
    except OAuth2Error as exc:
        headers.extend(exc.headers.items())
        if exc.status_code == 405:
            headers.append(("Allow", route.allow))
        body = orjson.dumps({"error": exc.error, "error_description": exc.description})
        return TokenAnswer(exc.status_code, body, headers, body, exc.error, exc.description)
    except DATABASE_UNAVAILABLE as exc:
        logger.warning(
            "OAuth token request answered 503, database unavailable (%s) request_id=%s", type(exc).__name__, request_id
        )
        error, description = (
            "temporarily_unavailable",
            f"The database is unavailable; retry later (request {request_id}).",
        )
        headers.append(("Retry-After", str(RETRY_AFTER_SECONDS)))
        body = orjson.dumps({"error": error, "error_description": description})
        return TokenAnswer(503, body, headers, body, error, description)
    except Exception:
        # A safety net, not a code path: the traceback and the request id, so the answer can be traced.
        logger.exception("OAuth token request failed request_id=%s", request_id)
        error, description = "server_error", f"Internal error (request {request_id})."
        body = orjson.dumps({"error": error, "error_description": description})
        return TokenAnswer(500, body, headers, body, error, description)
    body = grant.body
    logged = orjson.dumps({**body, "access_token": MASK})
    return TokenAnswer(200, orjson.dumps(body), headers, logged, "", "")


def _grant(
    environ: Mapping[str, Any],
    read_body: Callable[[], bytes],
    method: str,
    directory_id: str,
    route: Route,
    exchange: Exchange,
) -> Grant:
    target = route.methods.get(method)
    if target is None:
        raise invalid_request(f"{method} is not allowed here; use {route.allow}.", status=405)
    if content_length(environ) > MAX_BODY_BYTES:
        raise invalid_request(f"The request body is larger than {MAX_BODY_BYTES} bytes.", status=413)
    content_type, parameters = parse_header_parameters(environ.get("CONTENT_TYPE", ""))
    charset = parameters.get("charset", "utf-8").lower()
    if content_type != FORM or charset not in ("utf-8", "utf8"):
        raise invalid_request(f"Send the parameters as {FORM} (UTF-8), e.g. grant_type=client_credentials.")
    raw = read_body()
    exchange.request_body = masked_form(raw)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise invalid_request("The body must be form-urlencoded: bytes outside ASCII are percent-escaped.") from None
    if _BAD_ESCAPE.search(text):
        raise invalid_request("The body is not valid form encoding: a % not followed by two hexadecimal digits.")
    # oauthlib refuses a form with ASCII characters left unescaped that browsers and clients do send (a
    # quote, a backslash, a space); escaped, they decode to the same parameters.
    text = _UNESCAPED.sub(lambda found: f"%{ord(found.group()):02X}", text)
    return target.handler(
        directory_id=directory_id,
        body=text,
        basic=basic_credentials(environ.get("HTTP_AUTHORIZATION")),
        client_ip=client_address(environ),
        seen=exchange.seen,
    )


def basic_credentials(header: str | None) -> Credentials | None:
    """The client's credentials in an `Authorization: Basic` header (RFC 7617; RFC 6749 §2.3.1: client_id and
    client_secret each form-urlencoded, joined by a colon, in base64); MALFORMED_BASIC when it cannot be
    read; None without a header or with another scheme."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        client_id, colon, secret = decoded.partition(":")
        if not colon:
            return MALFORMED_BASIC
        return Credentials(_form_decoded(client_id), _form_decoded(secret))
    except ValueError:  # not base64, not ASCII, not UTF-8, a malformed escape (binascii.Error, UnicodeError)
        return MALFORMED_BASIC


def _form_decoded(text: str) -> str:
    """One name or value of form encoding, decoded: `+` is a space, `%XX` a byte, the bytes UTF-8 text a
    database and the JSON encoder can hold. ValueError saying what is wrong otherwise."""
    if _BAD_ESCAPE.search(text):
        raise ValueError("a % not followed by two hexadecimal digits")
    try:
        value = unquote_to_bytes(text.replace("+", " ")).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("escaped bytes that are not UTF-8") from None
    problem = text_problem(value)
    if problem:
        raise ValueError(f"a value {problem}")
    return value
