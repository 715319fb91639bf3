"""config.wsgi: SCIM requests run through settings.SCIM_MIDDLEWARE, everything else through the full chain.

These call the WSGI application granian serves (Django's test Client builds its own handler with the
full chain, so the other tests never see the split). Transactional, because each request closes or
reuses the database connection the way a real one does.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from django.conf import settings
from django.db import OperationalError

from config.wsgi import SurfaceApplication, application
from core import ratelimit
from directories.models import Directory, DirectoryUser
from scim.protocol.versions import version_of
from tests.scim.conftest import SCIM_CT, handler_failing, user_body
from tests.scim.conftest import wsgi_run as run

pytestmark = pytest.mark.django_db(transaction=True)


def call(path: str, *, method: str = "GET", body: Any = None, host: str = "testserver", **headers: str) -> Any:
    data = b"" if body is None else orjson.dumps(body)
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": host,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(data),
        "wsgi.errors": io.StringIO(),
        "CONTENT_LENGTH": str(len(data)),
        "CONTENT_TYPE": SCIM_CT if body is not None else "",
        **{"HTTP_" + name.upper(): value for name, value in headers.items()},
    }
    seen: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen["status"] = int(status.split()[0])
        seen["headers"] = response_headers

    chunks = application(environ, start_response)
    try:
        seen["body"] = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    cookies = [value for name, value in seen["headers"] if name == "Set-Cookie"]
    return seen["status"], dict(seen["headers"]), cookies, seen["body"]


def test_scim_requests_get_only_the_scim_middleware(directory_a: Directory) -> None:
    assert isinstance(application, SurfaceApplication)
    assert settings.SCIM_PATH_PREFIX == "/api/scim/"
    base = f"/api/scim/v2.0/{directory_a.id}"
    bearer = f"Bearer {directory_a.scim_secret}"

    status, headers, cookies, body = call(f"{base}/Users", method="POST", body=user_body(), authorization=bearer)
    assert status == 201, body
    created = orjson.loads(body)
    assert DirectoryUser.objects.filter(id=created["id"], directory=directory_a).exists()
    assert headers["Content-Type"] == SCIM_CT
    assert headers["X-Content-Type-Options"] == "nosniff"  # SecurityMiddleware stays
    assert "X-Frame-Options" not in headers  # the clickjacking middleware is not in the SCIM chain
    assert cookies == []  # no session or CSRF cookie

    status, headers, _, body = call(f"{base}/Users/{created['id']}", authorization=bearer)
    assert status == 200 and orjson.loads(body)["userName"] == "jane@example.com"
    status, headers, _, body = call(f"{base}/Users/{created['id']}", authorization="Bearer wrong")
    assert status == 401 and headers["Content-Type"] == SCIM_CT


def test_other_paths_keep_the_full_chain(db: Any) -> None:
    status, headers, _, _ = call("/portal/login")
    assert status == 200
    assert headers["X-Frame-Options"] == "DENY"
    # The CSRF middleware still guards the portal: a form post without a token is refused.
    status, _, _, _ = call("/portal/login", method="POST", body={"email": "a@example.com", "password": "x"})
    assert status == 403
    # Built once at import: the subset handler put settings.MIDDLEWARE back as it found it.
    assert "django.contrib.sessions.middleware.SessionMiddleware" in settings.MIDDLEWARE
    assert len(settings.MIDDLEWARE) > len(settings.SCIM_MIDDLEWARE)


def test_scim_paths_still_check_the_host(directory_a: Directory, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    status, _, _, _ = call(
        f"/api/scim/v2.0/{directory_a.id}/Users", host="evil.example", authorization=f"Bearer {directory_a.scim_secret}"
    )
    assert status == 400


# --- scim.http.wsgi: SCIM requests answered without Django's handler -------------------------------------


class Counting:
    """The Django handler behind scim.http.wsgi, counting the requests handed to it."""

    def __init__(self) -> None:
        self.handler = application.scim.fallback
        self.calls = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.calls += 1
        return self.handler(environ, start_response)


@pytest.fixture
def fast() -> Any:
    from scim.http.wsgi import ScimApplication

    fallback = Counting()
    app = ScimApplication(fallback=fallback)
    app.fallback_calls = lambda: fallback.calls
    return app


def same_answer(fast: Any, path: str, **request: Any) -> tuple[str, bytes]:
    """The request through scim.http.wsgi and through Django's handler: the same status, headers and body.
    Both echo the request's X-Request-Id (a fixed one unless the case sends its own), so the headers
    compare equal, and both find the directory's rate-limit bucket full (its RateLimit-Remaining the same)."""
    request.setdefault("HTTP_X_REQUEST_ID", "same-answer-1")
    ratelimit.reset()
    ours = run(fast, path, **request)
    ratelimit.reset()
    django_answer = run(application.scim.fallback, path, **request)
    assert ours == django_answer, (path, request)
    return ours[0], ours[2]


def test_scim_wsgi_answers_as_django_does(directory_a: Directory, directory_b: Directory, fast: Any) -> None:
    import uuid

    base = f"/api/scim/v2.0/{directory_a.id}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    unknown = uuid.uuid4()
    patch = orjson.dumps(
        {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "value": {}}]}
    )
    big = b'{"userName": "n@x.io", "x": 18446744073709551616}'
    search = orjson.dumps({"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "count": 2})
    for name in ("ann@x.io", "bob@x.io", "cy@x.io"):  # so that a page of 1 and a page of 2 differ
        assert run(fast, f"{base}/Users", method="POST", body=orjson.dumps(user_body(name)), **auth)[0] == "201 Created"
    ann_row = DirectoryUser.objects.get(directory=directory_a, user_name="ann@x.io")
    ann, ann_version = ann_row.id, version_of(ann_row.updated_at)
    title = orjson.dumps(
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "path": "title", "value": "T"}],
        }
    )
    cases: list[tuple[str, dict[str, Any], int]] = [
        (f"{base}/Users/{unknown}", auth, 404),
        (f"{base}/Users", {**auth, "query": "filter=userName%20eq%20%22nobody%40x.io%22"}, 200),
        (f"{base}/Users", {**auth, "query": "startIndex=1&count=1&count=2"}, 200),  # the last value wins
        (f"{base}/Users/", auth, 200),
        (f"{base}/Groups", auth, 200),
        (f"{base}/ServiceProviderConfig", auth, 200),
        (f"{base}/Schemas", auth, 200),
        (f"{base}/ResourceTypes/User", auth, 200),
        (f"{base}/Users", {}, 401),  # WWW-Authenticate
        (f"{base}/Users", {"HTTP_AUTHORIZATION": "Bearer wrong"}, 401),
        (f"{base}/Users", {"HTTP_AUTHORIZATION": f"Bearer {directory_b.scim_secret}"}, 401),
        (f"{base}/Users", {**auth, "method": "POST", "body": b"{not json"}, 400),
        (f"{base}/Users", {**auth, "method": "POST", "body": b"{}", "CONTENT_TYPE": "text/plain"}, 415),
        (f"{base}/Users", {**auth, "method": "POST", "body": b"{}", "CONTENT_LENGTH": str(2 * 1024 * 1024)}, 413),
        (f"{base}/ServiceProviderConfig", {**auth, "method": "DELETE"}, 405),  # Allow
        (f"{base}/Users/{unknown}", {**auth, "method": "PATCH", "body": patch}, 404),
        (f"{base}/Users/{unknown}", {**auth, "method": "DELETE"}, 404),
        (f"{base}/Nothing", auth, 404),
        (base, auth, 404),
        (f"{base}/Users/" + "é".encode().decode("latin-1"), auth, 404),  # PATH_INFO as a server gives it
        (f"{base}/Users", {**auth, "query": "&".join(f"p{i}=1" for i in range(1001))}, 400),  # too many fields
        # The hardening cases: each must be the same SCIM answer through both entries.
        (f"{base}/Users", {**auth, "query": "filter=userName%20eq%20%22%5Cu0000%22"}, 400),
        (f"{base}/Groups", {**auth, "query": "filter=displayName%20eq%20%22%5Cud800%22"}, 400),
        (f"{base}/Users", {**auth, "query": "startIndex=18446744073709551616&count=99999999999999999999"}, 200),
        (f"{base}/Users", {**auth, "query": "count=1_0"}, 400),
        (f"{base}/Users", {**auth, "method": "POST", "body": big}, 400),
        (f"{base}/Groups", {**auth, "method": "POST", "body": orjson.dumps({"displayName": "ﬃ" * 200})}, 400),
        (f"{base}/Users", {**auth, "method": "POST", "body": orjson.dumps(user_body("ß" * 300))}, 400),
        (f"{base}/Users/.search", {**auth, "method": "POST", "body": search}, 200),
        (f"{base}/Groups/.search", {**auth, "method": "POST", "body": search}, 200),
        (f"{base}/.search", {**auth, "method": "POST", "body": search}, 200),
        (f"{base}/.search", {**auth, "method": "POST", "body": b'{"sortBy": "nosuch"}'}, 400),
        (f"{base}/Users", {**auth, "query": "sortBy=name.familyName&sortOrder=descending"}, 200),
        (f"{base}/Users/{ann}", {**auth, "HTTP_IF_NONE_MATCH": ann_version}, 304),
        (f"{base}/Users/{ann}", {**auth, "HTTP_IF_NONE_MATCH": 'W/"1"'}, 200),
        (f"{base}/Users/{ann}", {**auth, "method": "PATCH", "body": title, "HTTP_IF_MATCH": 'W/"1"'}, 412),
        (f"{base}/Users/{ann}", {**auth, "method": "PATCH", "body": title, "HTTP_IF_MATCH": "nonsense"}, 400),
        (f"{base}/Users/.search", auth, 405),  # Allow: POST
        (f"{base}/Users/%00", auth, 404),
        (f"{base}/Users", {**auth, "HTTP_X_REQUEST_ID": "lb-42"}, 200),
        (f"{base}/Users", {**auth, "HTTP_X_REQUEST_ID": "bad id\n"}, 200),  # replaced: compared without it below
    ]
    for path, request, status in cases:
        if request.get("HTTP_X_REQUEST_ID", "").startswith("bad"):
            ours, theirs = run(fast, path, **request), run(application.scim.fallback, path, **request)
            ours_id, theirs_id = dict(ours[1])["X-Request-Id"], dict(theirs[1])["X-Request-Id"]
            assert len(ours_id) == len(theirs_id) == 32 and ours[2] == theirs[2]
            continue
        status_line, _body = same_answer(fast, path, **request)
        assert int(status_line.split()[0]) == status, (path, request)
    assert fast.fallback_calls() == 0  # every one of them was answered by scim.http.wsgi

    # Paths the SCIM routes do not match, and a Host that is not allowed, are Django's to answer.
    same_answer(fast, "/api/scim/v2.0/", **auth)
    same_answer(fast, "/api/scim/other", **auth)
    assert fast.fallback_calls() == 2


def test_scim_wsgi_writes_go_through(directory_a: Directory, fast: Any) -> None:
    from directories.models import DirectoryGroup, GroupMembership

    base = f"/api/scim/v2.0/{directory_a.id}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    status, headers, body = run(fast, f"{base}/Users", method="POST", body=orjson.dumps(user_body()), **auth)
    assert status == "201 Created", body
    user = orjson.loads(body)
    assert ("Location", user["meta"]["location"]) in headers
    assert DirectoryUser.objects.get(id=user["id"]).user_name == "jane@example.com"
    group_doc = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Ops"}
    status, _, body = run(fast, f"{base}/Groups", method="POST", body=orjson.dumps(group_doc), **auth)
    group = orjson.loads(body)
    assert status == "201 Created" and DirectoryGroup.objects.filter(id=group["id"]).exists()
    add = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "add", "path": "members", "value": [{"value": user["id"]}]}],
    }
    status, _, _ = run(fast, f"{base}/Groups/{group['id']}", method="PATCH", body=orjson.dumps(add), **auth)
    assert status == "204 No Content"
    assert GroupMembership.objects.filter(group_id=group["id"], user_id=user["id"]).exists()
    off = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "value": {"active": False}}],
    }
    status, _, body = run(fast, f"{base}/Users/{user['id']}", method="PATCH", body=orjson.dumps(off), **auth)
    assert status == "200 OK" and orjson.loads(body)["active"] is False
    assert DirectoryUser.objects.get(id=user["id"]).active is False
    status, _, body = run(fast, f"{base}/Users/{user['id']}", method="DELETE", **auth)
    assert (status, body) == ("204 No Content", b"")
    assert not DirectoryUser.objects.filter(id=user["id"]).exists()
    assert fast.fallback_calls() == 0


def test_scim_wsgi_leaves_a_disallowed_host_to_django(directory_a: Directory, fast: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["roster.test"]
    path = f"/api/scim/v2.0/{directory_a.id}/Users"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    status, _body = same_answer(fast, path, **auth)  # Host: testserver is no longer allowed
    assert status.startswith("400")
    assert fast.fallback_calls() == 1
    status, _body = same_answer(fast, path, HTTP_HOST="roster.test", **auth)
    assert status.startswith("200")
    assert fast.fallback_calls() == 1  # allowed: answered by scim.http.wsgi


@pytest.mark.parametrize(
    "setting, value",
    [
        ("APPEND_SLASH", True),
        ("SECURE_SSL_REDIRECT", True),
        ("SECURE_HSTS_SECONDS", 3600),
        ("SCIM_MIDDLEWARE", ["django.middleware.common.CommonMiddleware"]),
    ],
)
def test_scim_wsgi_leaves_settings_it_does_not_cover_to_django(
    directory_a: Directory, fast: Any, settings: Any, setting: str, value: Any
) -> None:
    setattr(settings, setting, value)
    run(fast, f"/api/scim/v2.0/{directory_a.id}/Users", HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}")
    assert fast.fallback_calls() == 1


@pytest.mark.parametrize(
    ("error", "status"),
    [(RuntimeError("boom"), 500), (OperationalError("the database system is shutting down"), 503)],
)
def test_scim_wsgi_and_django_give_the_same_funnel_answers(
    directory_a: Directory, fast: Any, monkeypatch: pytest.MonkeyPatch, error: Exception, status: int
) -> None:
    handler_failing(monkeypatch, "users", "GET", error)
    base = f"/api/scim/v2.0/{directory_a.id}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    status_line, body = same_answer(fast, f"{base}/Users", HTTP_X_REQUEST_ID="funnel-1", **auth)
    assert int(status_line.split()[0]) == status
    document = orjson.loads(body)
    assert document["status"] == str(status) and "funnel-1" in document["detail"]
    headers = dict(run(fast, f"{base}/Users", **auth)[1])
    assert headers["Content-Type"] == SCIM_CT and headers["X-Request-Id"]
    assert (headers.get("Retry-After") == "5") is (status == 503)


# --- one route table: scim.http.urls and scim.http.wsgi both route by scim.routes ------------------------------

# Paths after the prefix, as Django's get_path_info() gives them (decoded): a trailing slash, doubled
# slashes, a percent-encoded slash (a literal "%2F" once the server has decoded "%252F"), `.search`,
# an empty id, unicode, control characters, a newline (which `$` alone would let through).
TRICKY_PATHS = [
    "",
    "{d}",
    "{d}/",
    "{d}//",
    "{d}/Users",
    "{d}/Users/",
    "{d}/Users//",
    "{d}/Users///",
    "{d}/.search",
    "{d}/.search/",
    "{d}/Users/.search",
    "{d}/Users/.search/",
    "{d}/Users/a%2Fb",
    "{d}/Users/a/b",
    "{d}/Users/%2F",
    "{d}/Users/ ",
    "{d}/Users/é",
    "{d}/Üsers/ß",
    "{d}/Users/\u2028",
    "{d}/Users/\x00",
    "{d}/Users/x\n",
    "{d}\n/Users",
    "{d}/Users\n",
    "/{d}/Users",
    "{d}//Users",
    "{d}/ResourceTypes/User",
    "{d}/Users/..",
]


def _django_route(path: str) -> dict[str, str] | None:
    """The view arguments Django's resolver (the whole URLconf) gives a path, or None when it is not
    scim_view's."""
    from django.urls import Resolver404, resolve

    from scim.http.views import scim_view

    try:
        match = resolve(path)
    except Resolver404:
        return None
    return match.kwargs if match.func is scim_view else None


def test_django_urlpatterns_are_built_from_the_route_table() -> None:
    from scim.http.urls import urlpatterns
    from scim.http.views import scim_view
    from scim.routes import PATTERNS

    assert [p.pattern.regex.pattern for p in urlpatterns] == [f"^{pattern}$" for pattern in PATTERNS]
    assert all(p.callback is scim_view for p in urlpatterns)


def test_django_and_the_wsgi_matcher_route_tricky_paths_alike(directory_a: Directory) -> None:
    from scim.routes import PREFIX, scim_path_args

    routed = 0
    for rest in TRICKY_PATHS:
        path = PREFIX + rest.format(d=directory_a.id)
        ours = scim_path_args(path)
        assert ours == _django_route(path), path
        routed += ours is not None
    assert 0 < routed < len(TRICKY_PATHS)  # both kinds are in the list
    for path in ("/api/scim/v2.0", "/api/scim/v2.0//", "/api/scim/v2.1/x/Users", "/API/scim/v2.0/x/Users"):
        assert scim_path_args(path) is None and _django_route(path) is None, path


def test_tricky_paths_get_the_same_answer_through_both_entries(directory_a: Directory, fast: Any) -> None:
    from scim.routes import PREFIX, scim_path_args

    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    unrouted = 0
    for rest in TRICKY_PATHS:
        decoded = PREFIX + rest.format(d=directory_a.id)
        path_info = decoded.encode().decode("latin-1")  # PATH_INFO as a server gives it
        same_answer(fast, path_info, **auth)
        unrouted += scim_path_args(decoded) is None
    assert fast.fallback_calls() == unrouted  # exactly the paths the table does not match went to Django


def test_a_refusal_from_memory_starts_no_django_request(
    directory_a: Directory, fast: Any, settings: Any, limiter_clock: Any
) -> None:
    """A directory past its burst is refused before request_started: no connection check, no query, no
    request_finished (nothing of it touches the database); it is still answered 429 and logged. An admitted
    request gets both signals. The limiter's clock is stopped: the bucket does not refill however slow the
    requests are."""
    from django.core import signals
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from directories.activity import recorder
    from directories.models import ScimLogEntry

    settings.SCIM_RATE_LIMIT = 1500  # a burst of 150
    ratelimit.reset()
    path = f"/api/scim/v2.0/{directory_a.id}/Users"
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    seen: list[str] = []

    def started(**_: Any) -> None:
        seen.append("started")

    def finished(**_: Any) -> None:
        seen.append("finished")

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        statuses = []
        for _ in range(200):
            seen.clear()
            with CaptureQueriesContext(connection) as queries:
                status = int(run(fast, path, **bearer)[0].split()[0])
            statuses.append(status)
            if status == 429:
                break
            assert status == 200 and seen == ["started", "finished"]
        assert statuses[-1] == 429, statuses
        assert seen == [] and len(queries) == 0
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    recorder.flush()
    assert ScimLogEntry.objects.filter(directory=directory_a, status=429).count() == 1


def test_the_request_signals_work_is_done_once_per_connection_with_only_djangos_receivers(
    directory_a: Directory, fast: Any
) -> None:
    """With only Django's receivers on the request signals, scim.http.wsgi does their work itself: the
    connection's query log starts empty for each request, and a connection past CONN_MAX_AGE (0: one
    request) is closed when the request ends, as `close_old_connections` would."""
    import time

    from django.core import signals
    from django.db import connection

    from scim.http import wsgi

    assert wsgi._only_djangos(signals.request_started, wsgi._DJANGO_STARTED)
    assert wsgi._only_djangos(signals.request_finished, wsgi._DJANGO_FINISHED)
    path = f"/api/scim/v2.0/{directory_a.id}/Users/7d0f4c44-63c8-4f7e-9d1b-1f2d9b0c1c11"
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    connection.ensure_connection()
    connection.queries_log.append({"sql": "left over from before", "time": "0"})
    saved = connection.settings_dict["CONN_MAX_AGE"], connection.close_at, connection.force_debug_cursor
    connection.force_debug_cursor = True
    try:
        connection.settings_dict["CONN_MAX_AGE"], connection.close_at = 600, time.monotonic() + 600
        assert run(fast, path, **bearer)[0].startswith("404")
        logged = [q["sql"] for q in connection.queries_log]
        assert logged and "left over from before" not in logged  # cleared when the request started
        assert connection.connection is not None  # within CONN_MAX_AGE: kept
        connection.settings_dict["CONN_MAX_AGE"], connection.close_at = 0, 0.0
        assert run(fast, path, **bearer)[0].startswith("404")
        assert connection.connection is None  # past its age when the request finished: closed
    finally:
        connection.settings_dict["CONN_MAX_AGE"], connection.close_at, connection.force_debug_cursor = saved
        connection.ensure_connection()
