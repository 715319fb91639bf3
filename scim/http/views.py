"""HTTP adapter of the SCIM endpoint: headers and bytes in, scim.processor.process, bytes out.

`scim_answer` is the adapter; `scim_view` feeds it from Django's request, scim.http.wsgi straight from the
WSGI environ (the path production takes). Both hand it the environ and a way to read the body, and
`http_request` finds the request's route (scim/routes.py, once) and makes them the one `ScimRequest`
(scim/request.py) the processor takes. Every answer,
errors included, is `application/scim+json` (interop E11). Body size and content type are checked
before anything else so that a huge or non-JSON body is never read into the processor. Each answered
request is counted for /metrics and, when it is a write or a 4xx, logged (scim/http/observe.py).

The one route under the SCIM prefix that is not a SCIM resource, the token endpoint of the directory's
OAuth client (contract §4.3), is found by the same lookup and answered by scim/http/token_endpoint.py in RFC
6749's format (`application/json`); its scope, counting and record are the same as a SCIM request's.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, NamedTuple

import orjson
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils.http import parse_header_parameters
from django.views.decorators.csrf import csrf_exempt

from core.bearer import bearer_token
from core.logfilters import mark_logged
from core.outage import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS
from core.ratelimit import Verdict
from core.requestid import HEADER, scope_enter
from scim.http.activity import Exchange
from scim.http.limits import TOKEN_ERROR, Admission, early_refusal, refused_detail, scim_refused, token_refused_body
from scim.http.observe import scim_observed
from scim.http.request import content_length
from scim.http.token_endpoint import CONTENT_TYPE as TOKEN_CONTENT_TYPE
from scim.http.token_endpoint import NO_STORE as TOKEN_NO_STORE
from scim.http.token_endpoint import token_answer
from scim.processor import MAX_BODY_BYTES, process
from scim.protocol.errors import ScimError, invalid_syntax
from scim.request import OAUTH, Route, ScimRequest
from scim.routes import scim_route

logger = logging.getLogger("roster.scim")

CONTENT_TYPE = "application/scim+json"
ACCEPTED_TYPES = ("application/scim+json", "application/json")


UNCHECKED = object()  # scim_answer's `refused` when its caller did not ask early_refusal


class Answer(NamedTuple):
    status: int
    body: bytes
    headers: list[tuple[str, str]]
    # What the entry records of the request once the answer is built (scim.http.activity).
    exchange: Exchange


def scim_answer(
    environ: MutableMapping[str, Any],
    read_body: Callable[[], bytes],
    directory_id: str,
    resource: str = "",
    resource_id: str = "",
    *,
    refused: Verdict | None | object = UNCHECKED,
) -> Answer:
    """The status, body and headers of the answer to one SCIM request, and its exchange to record once
    the answer is sent; never raises.

    `environ` is the request's WSGI environ (Django's `request.META`), `read_body` reads its body (called
    at most once, see `http_request`); the other arguments are the route's (scim/routes.py). `refused` is
    `early_refusal(directory_id)` when the caller asked it already (scim.http.wsgi, which then starts no
    Django request for a refusal: nothing of it touches the database).

    The one error funnel of the SCIM surface: whatever goes wrong below, the answer is SCIM JSON with
    the request's id (`X-Request-Id`, on every answer); the token endpoint's answers are RFC 6749's JSON
    (scim/http/token_endpoint.py, its own funnel). The log lines name the method, the path and the request id,
    never the body, the query or the Authorization header (they carry PII and secrets)."""
    started = time.perf_counter()
    method = (environ.get("REQUEST_METHOD") or "GET").upper()
    scope, scope_token = scope_enter(environ)
    request_id = scope.request_id
    exchange = Exchange(environ, method, directory_id, request_id)
    resource_id = resource_id.strip("/")
    route = scim_route(resource, resource_id)

    def read() -> bytes:
        exchange.request_body = read_body()
        return exchange.request_body

    admission = Admission()
    if refused is UNCHECKED:
        refused = early_refusal(directory_id)  # the directory's rate limit, while its bucket is full (limits.py)
    if isinstance(refused, Verdict):
        status, body, headers = _throttled(refused, route, exchange)
    elif route is not None and route.protocol == OAUTH:
        # The token endpoint of the directory's OAuth client: RFC 6749's answers, recorded like SCIM's.
        token = token_answer(environ, read_body, method, directory_id, route, exchange, request_id)
        seen = exchange.seen
        verdict = admission.count(seen.directory) if token.status == 200 and seen.authenticated else None
        if verdict is not None and not verdict.allowed:
            status, body, headers = _throttled(verdict, route, exchange)  # the token is dropped unsent
        else:
            status, body = token.status, token.body
            exchange.answered(status, token.logged, token.error, token.description)
            headers = [token.headers[0], (HEADER, request_id), *token.headers[1:]]
            headers.extend(verdict.headers() if verdict is not None else ())
    else:
        status, body, headers = _scim_answer(
            environ, read, method, directory_id, resource, resource_id, route, exchange, admission
        )
    # A resource type the table does not know is "other" on /metrics: a client cannot make up label values.
    resource_type = route.resource_type if route is not None else ("other" if resource else "-")
    scim_observed(scope, scope_token, method=method, resource_type=resource_type, status=status, started=started)
    return Answer(status, body, headers, exchange)


def _scim_answer(
    environ: MutableMapping[str, Any],
    read: Callable[[], bytes],
    method: str,
    directory_id: str,
    resource: str,
    resource_id: str,
    route: Route | None,
    exchange: Exchange,
    admission: Admission,
) -> tuple[int, bytes, list[tuple[str, str]]]:
    """The status, body and headers of a SCIM request's answer, the error funnel of the SCIM surface."""
    request_id = exchange.request_id
    data = problem = None
    extra: list[tuple[str, str]] = []
    try:
        request = http_request(environ, read, method, directory_id, resource, resource_id, route)
        result = process(request, seen=exchange.seen, admit=admission)
        status, data = result["status"], result["data"]
        body = b"" if data is None else encode(data)
        if result.get("version"):
            extra.append(("ETag", result["version"]))  # RFC 7644 §3.14: the same as meta.version
        if status >= 400:
            problem = data
    except ScimError as exc:
        problem = exc.body()
        status, body = exc.status, orjson.dumps(problem)
    except (SuspiciousOperation, BadRequest) as exc:
        # Django's own refusals of a malformed request, e.g. more query parameters than
        # DATA_UPLOAD_MAX_NUMBER_FIELDS: a 400 in SCIM's format (the class only, not the request).
        problem = invalid_syntax(f"The request was refused ({type(exc).__name__}).").body()
        status, body = 400, orjson.dumps(problem)
    except DATABASE_UNAVAILABLE as exc:
        # The database is down, restarting or dropped this connection: the client may retry, and a
        # traceback per request would flood the log during an outage. Django closes the broken
        # connection when the request finishes (request_finished), so the next request connects anew.
        logger.warning(
            "SCIM request %s %r answered 503, database unavailable (%s) request_id=%s",
            method,
            _path(environ),
            type(exc).__name__,
            request_id,
        )
        status = 503
        problem = ScimError(503, f"The database is unavailable; retry later (request {request_id}).").body()
        body = orjson.dumps(problem)
        extra.append(("Retry-After", str(RETRY_AFTER_SECONDS)))
    except Exception:
        # A safety net, not a code path: the traceback and the request id, so the answer can be traced.
        logger.exception("SCIM request %s %r failed request_id=%s", method, _path(environ), request_id)
        status = 500
        problem = ScimError(500, f"Internal error (request {request_id}).").body()
        body = orjson.dumps(problem)
    found = problem if isinstance(problem, dict) else {}
    exchange.answered(status, body, found.get("scimType"), found.get("detail"))
    exchange.throttled = admission.refused
    headers = [("Content-Type", CONTENT_TYPE), (HEADER, request_id), *extra]
    if admission.verdict is not None:
        headers.extend(admission.verdict.headers())  # RateLimit-*, and Retry-After on its 429
    if status == 401:
        headers.append(("WWW-Authenticate", 'Bearer realm="Roster SCIM"'))
    if status == 405 and route is not None:
        headers.append(("Allow", route.allow))
    if status == 201 and isinstance(data, dict):
        location = (data.get("meta") or {}).get("location")
        if location:
            headers.append(("Location", location))
    return status, body, headers


def _throttled(verdict: Verdict, route: Route | None, exchange: Exchange) -> tuple[int, bytes, list[tuple[str, str]]]:
    """The 429 of a request over its directory's rate limit, in its route's format: RFC 6749's JSON on
    the token endpoint (no-store, as its every answer), else a SCIM error. Nothing of it was processed."""
    if route is not None and route.protocol == OAUTH:
        body = token_refused_body(verdict)
        exchange.answered(429, body, TOKEN_ERROR, refused_detail(verdict))
        headers = [("Content-Type", TOKEN_CONTENT_TYPE), (HEADER, exchange.request_id), *TOKEN_NO_STORE]
    else:
        problem = scim_refused(verdict).body()
        body = orjson.dumps(problem)
        exchange.answered(429, body, None, problem["detail"])
        headers = [("Content-Type", CONTENT_TYPE), (HEADER, exchange.request_id)]
    exchange.throttled = True
    return 429, body, [*headers, *verdict.headers()]


def encode(data: dict[str, Any]) -> bytes:
    """orjson, or the standard library's encoder for a document orjson refuses: a number beyond 64 bits
    that a row holds from before the input gate (scim.protocol.inputs) existed must not make a list unreadable.
    Anything the fallback refuses too (NaN, an unpaired surrogate) reaches the error funnel."""
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def http_request(
    environ: Mapping[str, Any],
    read_body: Callable[[], bytes],
    method: str,
    directory_id: str,
    resource: str,
    resource_id: str,
    route: Route | None,
) -> ScimRequest:
    """The SCIM request of an HTTP request to `route` (scim.routes.scim_route of its resource and id).
    A body longer than MAX_BODY_BYTES by its Content-Length is refused (413) before it is read; it is read
    only for a method its route takes one with, and must then be JSON (415). The query is parsed as
    Django's `request.GET` is, last value of a name winning."""
    if content_length(environ) > MAX_BODY_BYTES:
        raise ScimError(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    target = route.methods.get(method) if route is not None else None
    wants_body = target is not None and target.body
    body = read_body() if wants_body else b""
    if body and parse_header_parameters(environ.get("CONTENT_TYPE", ""))[0] not in ACCEPTED_TYPES:
        raise ScimError(415, "Send the body as application/scim+json or application/json.")
    raw_query = environ.get("QUERY_STRING", "")
    query: dict[str, str | None] = {}
    if raw_query:
        params = QueryDict(raw_query.encode("iso-8859-1"))  # as WSGIRequest.GET: the raw bytes, decoded as UTF-8
        query = {k: params.get(k) for k in params}
    return ScimRequest.build(
        method=method,
        directory_id=directory_id,
        resource_type=resource,
        resource_id=resource_id,
        query=query,
        body=body if wants_body else None,
        secret=bearer_token(environ.get("HTTP_AUTHORIZATION")),
        route=route,
        if_match=environ.get("HTTP_IF_MATCH"),
        if_none_match=environ.get("HTTP_IF_NONE_MATCH"),
    )


class ScimResponse(HttpResponse):
    """A SCIM answer through Django's handler: it records its request (scim.http.activity) when the
    server closes it, after sending it (the WSGI entry, scim/http/wsgi.py, records just before handing
    its body to the server)."""

    def __init__(self, *args: Any, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exchange = exchange

    def close(self) -> None:
        try:
            self.exchange.record()
        finally:
            super().close()


@csrf_exempt
def scim_view(request: HttpRequest, directory_id: str, resource: str = "", resource_id: str = "") -> HttpResponse:
    # request.body, not META's wsgi.input: Django reads the stream limited to the Content-Length.
    answer = scim_answer(request.META, lambda: request.body, directory_id, resource, resource_id)
    content_type = answer.headers[0][1]  # SCIM's, or the token endpoint's JSON
    response = ScimResponse(answer.body, status=answer.status, content_type=content_type, exchange=answer.exchange)
    if answer.status >= 500:
        # scim_answer logged it once, with the request id; django.request would log a second line.
        mark_logged(request)
    for name, value in answer.headers[1:]:  # the first is the Content-Type, set above
        response[name] = value
    return response


def _path(environ: Mapping[str, Any]) -> str:
    """The request's path, for a log line (never its query string)."""
    return environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
