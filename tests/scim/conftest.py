"""SCIM helpers: a client that speaks application/scim+json to directory A or B."""

from __future__ import annotations

import base64
import io
from typing import Any

import orjson
import pytest
from django.test import Client

from directories.models import Directory
from tests.actors import TEST_ACTOR, scene_trail_forget

SCIM_CT = "application/scim+json"
USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_URN = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_URN = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH_URN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_URN = "urn:ietf:params:scim:api:messages:2.0:Error"
LIST_URN = "urn:ietf:params:scim:api:messages:2.0:ListResponse"


class Scim:
    """A SCIM client bound to one directory: `scim.get("/Users")` → (status, json body or None)."""

    def __init__(self, directory: Directory, secret: str | None = None, query: str = "") -> None:
        self.directory = directory
        self.base = f"/api/scim/v2.0/{directory.id}"
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {secret or directory.scim_secret}")
        self.last: Any = None

    def call(self, method: str, path: str, body: Any = None, *, content_type: str = SCIM_CT, **extra: Any) -> Any:
        data = body if isinstance(body, bytes | str) or body is None else orjson.dumps(body)
        fn = getattr(self.client, method.lower())
        kwargs: dict[str, Any] = dict(extra)
        if data is not None:
            kwargs["data"] = data
            kwargs["content_type"] = content_type
        response = fn(self.base + path, **kwargs)
        self.last = response
        assert response["Content-Type"] == SCIM_CT if response.status_code != 204 or response.content else True
        payload = orjson.loads(response.content) if response.content else None
        return response.status_code, payload

    def get(self, path: str, **kw: Any) -> Any:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> Any:
        return self.call("PUT", path, body, **kw)

    def patch(self, path: str, body: Any, **kw: Any) -> Any:
        return self.call("PATCH", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.call("DELETE", path, **kw)

    def ops(self, path: str, *operations: dict[str, Any], **kw: Any) -> Any:
        return self.patch(path, {"schemas": [PATCH_URN], "Operations": list(operations)}, **kw)


def user_body(user_name: str = "jane@example.com", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schemas": [USER_URN],
        "userName": user_name,
        "name": {"givenName": "Jane", "familyName": "Doe"},
        "emails": [{"primary": True, "value": user_name, "type": "work"}],
        "active": True,
    }
    body.update(extra)
    return body


def group_body(name: str = "Engineering", members: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"schemas": [GROUP_URN], "displayName": name}
    if members is not None:
        body["members"] = [{"value": m} for m in members]
    body.update(extra)
    return body


@pytest.fixture
def scim_a(directory_a: Directory) -> Scim:
    return Scim(directory_a)


@pytest.fixture
def scim_b(directory_b: Directory) -> Scim:
    return Scim(directory_b)


@pytest.fixture
def outbox_kept(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, str]]:
    """Record the after-commit delivery kicks instead of draining, so recorded events stay in the outbox to
    be read. Needed on PostgreSQL, where these tests commit for real (tests/conftest.py) and a kick
    would hand the events to the in-process drain at once."""
    from webhooks.services import draining

    calls: list[tuple[Any, str]] = []
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: calls.append((directory_id, target)))
    return calls


@pytest.fixture
def hooked_directory(db, outbox_kept) -> Directory:  # noqa: ANN001
    """A directory with a webhook, so events land in the outbox (WebhookEvent rows), kept there to be read."""
    from directories.services import directory_create

    return directory_create(
        actor=TEST_ACTOR,
        data={
            "tenant": "initech",
            "product": "crm",
            "type": "generic-scim-v2",
            "webhook_url": "https://hooks.example.com/roster",
        },
    )


@pytest.fixture
def scim_hooked(hooked_directory: Directory) -> Scim:
    return Scim(hooked_directory)


def rows_of(directory: Directory) -> dict[str, list[dict[str, Any]]]:
    """Every row a SCIM request can change for `directory`: users, groups, memberships and the outbox,
    in a fixed order, so that two snapshots compare equal exactly when nothing changed. The in-process
    drains that earlier requests kicked (on PostgreSQL, where the tests commit) finish first: what they
    write (an event matched against the webhook endpoints, an attempt's outcome) is not the request's."""
    from directories.models import DirectoryGroup, DirectoryUser, GroupMembership
    from webhooks.models import WebhookEvent
    from webhooks.services import drain_pool

    drain_pool.drain(timeout=30)

    return {
        "users": list(DirectoryUser.objects.filter(directory=directory).order_by("id").values()),
        "groups": list(DirectoryGroup.objects.filter(directory=directory).order_by("id").values()),
        "members": list(
            GroupMembership.objects.filter(group__directory=directory).order_by("group_id", "user_id").values()
        ),
        "outbox": list(WebhookEvent.objects.filter(directory_id=directory.id).order_by("id").values()),
    }


def assert_scim_error(status: int, body: Any, expected: int, scim_type: str | None = None) -> dict[str, Any]:
    """An RFC 7644 §3.12 error body with this status (and scimType, when given)."""
    assert status == expected, body
    assert body["schemas"] == [ERROR_URN] and body["status"] == str(expected) and body["detail"], body
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    return body


def wsgi_run(app: Any, path: str, *, method: str = "GET", body: bytes = b"", query: str = "", **environ: str) -> Any:
    """One request through a WSGI app, as a server makes it: (status line, sorted headers, body)."""
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": SCIM_CT if body else "",
        **environ,
    }
    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen["status"], seen["headers"] = status, sorted(headers)

    chunks = app(env, start_response)
    try:
        out = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    return seen["status"], seen["headers"], out


def handler_failing(
    monkeypatch: pytest.MonkeyPatch, resource_type: str, method: str, error: Exception, resource_id: str = ""
) -> None:
    """Make the handler the route table names for `method` on `resource_type` (and `resource_id`) raise
    `error` once the request is authenticated, as a defect or an outage below the processor would."""
    from scim.routes import scim_route

    route = scim_route(resource_type, resource_id)
    assert route is not None and method in route.methods

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setitem(route.methods, method, route.methods[method]._replace(handler=failing))


# --- OAuth client credentials (contract §4.3) -----------------------------------------------------------

FORM_CT = "application/x-www-form-urlencoded"


class OAuth:
    """A directory's OAuth client: its secret, its token endpoint, and requests to it through the WSGI
    application granian serves (each from `remote`, the client address the throttle counts)."""

    def __init__(self, directory: Directory, secret: str) -> None:
        self.directory = directory
        self.secret = secret
        self.client_id = str(directory.id)
        self.path = f"/api/scim/v2.0/{directory.id}/oauth/token"

    def post(
        self,
        body: bytes | str = b"grant_type=client_credentials",
        *,
        authorization: str | None = None,
        content_type: str = FORM_CT,
        remote: str = "127.0.0.1",
        method: str = "POST",
        path: str | None = None,
        **environ: str,
    ) -> tuple[int, dict[str, str], Any]:
        """(status, headers, JSON body) of one request to the token endpoint. As Django's test Client does,
        the request's end does not close the test's database connection (it holds the test's transaction)."""
        from django.core.signals import request_finished, request_started
        from django.db import close_old_connections

        from config.wsgi import application

        raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        extra = {"REMOTE_ADDR": remote, "CONTENT_TYPE": content_type, **environ}
        if authorization is not None:
            extra["HTTP_AUTHORIZATION"] = authorization
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            status, headers, out = wsgi_run(application, path or self.path, method=method, body=raw, **extra)
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)
        return int(status.split()[0]), dict(headers), orjson.loads(out) if out else None

    def basic(self, client_id: str | None = None, secret: str | None = None) -> str:
        """`Authorization: Basic` with the client's id and secret, each form-urlencoded (RFC 6749 §2.3.1)."""
        return basic_header(client_id or self.client_id, self.secret if secret is None else secret)

    def grant(self, **kw: Any) -> dict[str, Any]:
        """A token by client_secret_basic; fails the test unless the endpoint answers 200."""
        status, _headers, body = self.post(authorization=self.basic(), **kw)
        assert status == 200, body
        return body

    def token(self) -> str:
        return self.grant()["access_token"]


def basic_header(client_id: str, secret: str) -> str:
    from urllib.parse import quote_plus

    raw = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return "Basic " + base64.b64encode(raw).decode()


def oauth_on(directory: Directory) -> OAuth:
    """Give the directory's OAuth client a secret (OAuth on) and return it."""
    from directories.services import directory_scim_oauth_secret_rotate

    directory, secret, _first = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory)
    scene_trail_forget()
    return OAuth(directory, secret)


@pytest.fixture
def oauth_a(directory_a: Directory) -> OAuth:
    return oauth_on(directory_a)


@pytest.fixture
def oauth_b(directory_b: Directory) -> OAuth:
    return oauth_on(directory_b)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The deprovision guard's clock, moved by hand (tests.scim.guardkit.Clock)."""
    from django.utils import timezone

    from directories.guard import rules
    from tests.scim.guardkit import Clock

    moved = Clock(timezone.now())
    monkeypatch.setattr(rules, "now", moved)
    return moved
