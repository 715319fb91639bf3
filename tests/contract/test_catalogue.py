"""A catalogue of hostile inputs against every surface, through the WSGI application granian serves.

This is the outside black-box check in test form: each case is a raw request (method, path bytes, query
bytes, headers, body bytes, Content-Length as sent) handed to `config.wsgi.application` in-process, with
DEBUG off and, on PostgreSQL, real commits (transaction mode), the way production runs. Every answer must
hold to these rules:

- never a 5xx (the database stays up here, so not even a 503);
- the error format of the surface the path belongs to: on `/api/scim/` SCIM JSON with the content type
  `application/scim+json` (errors carry the SCIM error schema and the status as a string), except a
  directory's OAuth token endpoint (`…/oauth/token`), which answers RFC 6749's `application/json`
  (`{error, error_description}` on every 4xx); on `/api/v1` and `/auditlog` the `{data, error}` envelope
  as `application/json`, `error` set on every 4xx;
- a 4xx changes nothing: directories, users, groups, memberships and the webhook outbox hash the same
  before and after;
- a 401 is the same bytes whatever was wrong with the credential, per surface (authorization matrix),
  and a credential of another directory or another surface never sees or touches anything.

Cases are generated per class (numbers, strings that grow under NFC + casefold, NUL and lone surrogates,
content types and lengths, body shapes, methods, path tricks, query strings, SCIM filters, PATCH
operations, attribute lists, REST paging, admin API) and run in a loop inside one test per class, so the
fixture (two directories, a user and group in each, API keys and admin tokens) is built once per class.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_to_bytes

import pytest
from django.db import connection

from config.wsgi import application
from directories.models import ApiKey, Directory, DirectoryGroup, DirectoryUser, GroupMembership
from tests.actors import TEST_ACTOR
from tests.scim.conftest import wsgi_run
from webhooks.models import WebhookEvent
from webhooks.services import drain_pool

pytestmark = pytest.mark.django_db(transaction=True)

SCIM_CT = "application/scim+json"
ERROR_URN = "urn:ietf:params:scim:api:messages:2.0:Error"
USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_URN = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_URN = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH_URN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
API_KEY = "test-env-api-key"  # config/settings_test.py API_KEYS
ROOT = "catalogue-root-token-0123456789abcdef"
JSON_CT = "application/json"
FORM_CT = "application/x-www-form-urlencoded"
TOKEN_TAIL = "/oauth/token"

# Numbers at and past every integer boundary, floats at the edge of double, and their text forms.
NUMBERS_TEXT = [
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "1e308",
    "1e309",
    "-1e309",
    "-0",
    "-0.0",
    "1e999999999",
    "1E-999999999",
    "0.1e1000000",
    "123456789012345678901234567890123456789012345678901234567890",
    "2.5",
    "NaN",
    "Infinity",
]
# Characters whose NFC + casefold form is longer than the character itself (ß → ss, ﬁ → fi, İ → i̇,
# ŉ → ʼn), at and just under the 512-character column limit and the 200 of directory fields.
# In body positions (64 of them) the numbers that sit on a boundary; query parameters get all of them.
BODY_NUMBERS = [
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "1e309",
    "-0",
    "1e999999999",
    "NaN",
]
GROWERS = ["ß", "ﬁ", "İ", "ŉ"]
LENGTHS = [199, 200, 201, 255, 256, 257, 511, 512, 513]
BAD_TEXT = [
    "\\u0000",
    "\\ud800",
    "\\udfff",
    "a\\ud800b",
    "\\udc00\\ud800",
]
BAD_QUERY = ["%00", "%ED%A0%80", "%ED%BF%BF", "%FF", "%C3", "%", "%zz", "%2", "\\u0000", "%25ED%25A0%2580"]


@dataclass
class World:
    a: Directory
    b: Directory
    user_a: str
    group_a: str
    user_b: str
    group_b: str
    db_key: str
    revoked_key: str
    admin_header: str
    admin_bearer: str
    disabled_admin_header: str
    # OAuth client credentials (contract §4.3): A's client secret, a token of A, one of B, one of A expired.
    oauth_secret_a: str = ""
    token_a: str = ""
    token_b: str = ""
    expired_token_a: str = ""
    results: list[tuple[str, int]] = field(default_factory=list)


@pytest.fixture
def world(transactional_db: None, settings: Any) -> World:
    from adminauth.services import admin_login_record, admin_token_create, admin_token_disable
    from audit.actors import Actor
    from directories.services import (
        api_key_create,
        api_key_revoke,
        directory_create,
        directory_scim_oauth_secret_rotate,
    )
    from scim.access_tokens import access_token_issue, lifetime

    settings.ADMIN_ROOT_TOKEN = ROOT
    # The token endpoint's cases try many wrong secrets on A: its per-directory budget must not answer 429
    # in place of what is under test (each case comes from its own address, send() below).
    settings.SCIM_OAUTH_MAX_FAILURES_PER_DIRECTORY = 10**6
    a = directory_create(
        actor=TEST_ACTOR, data={"name": "Acme Okta", "tenant": "acme", "product": "crm", "type": "okta-scim-v2"}
    )
    b = directory_create(
        actor=TEST_ACTOR, data={"name": "Globex", "tenant": "globex", "product": "crm", "type": "azure-scim-v2"}
    )
    a, oauth_secret_a, _ = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=a)
    b, _secret_b, _ = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=b)
    rows = {}
    for directory, tag in ((a, "a"), (b, "b")):
        user = DirectoryUser.objects.create(
            directory=directory,
            user_name=f"ann@{tag}.example",
            user_name_key=f"ann@{tag}.example",
            first_name="Ann",
            last_name="Lee",
            email=f"ann@{tag}.example",
            raw={"userName": f"ann@{tag}.example", "active": True},
        )
        group = DirectoryGroup.objects.create(
            directory=directory, display_name="Eng", display_name_key="eng", raw={"displayName": "Eng"}
        )
        GroupMembership.objects.create(group=group, user=user)
        rows[tag] = (str(user.id), str(group.id))
    _, db_key = api_key_create(actor=TEST_ACTOR, name="catalogue")
    revoked, revoked_key = api_key_create(actor=TEST_ACTOR, name="revoked")
    api_key_revoke(actor=TEST_ACTOR, api_key=revoked)
    admin, token, secret, jwt = admin_login_record(email="ops@example.com", actor=TEST_ACTOR)
    as_admin = Actor(name=admin.email, via="admin-api", admin=admin)
    off, off_secret = admin_token_create(actor=as_admin)
    admin_token_disable(token=off, actor=as_admin)
    return World(
        a=a,
        b=b,
        user_a=rows["a"][0],
        group_a=rows["a"][1],
        user_b=rows["b"][0],
        group_b=rows["b"][1],
        db_key=db_key,
        revoked_key=revoked_key,
        admin_header=f"id={token.id} token={secret} admin_token={ROOT}",
        admin_bearer=f"Bearer {jwt}",
        disabled_admin_header=f"id={off.id} token={off_secret} admin_token={ROOT}",
        oauth_secret_a=oauth_secret_a,
        token_a=access_token_issue(directory=a),
        token_b=access_token_issue(directory=b),
        expired_token_a=access_token_issue(directory=a, now=time.time() - lifetime() - 1),
    )


# --- one raw request ----------------------------------------------------------------------------


@dataclass
class Case:
    method: str
    path: str  # as sent on the request line: may hold percent-escapes, decoded the way granian does
    query: str = ""
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    content_length: str | None = None  # None: the body's length

    def label(self) -> str:
        shown = self.path if len(self.path) < 120 else self.path[:117] + "..."
        query = self.query if len(self.query) < 80 else self.query[:77] + "..."
        return f"{self.method} {shown}{'?' + query if query else ''} [{len(self.body)} B]"


_addresses = itertools.count(1)


def send(case: Case) -> tuple[int, dict[str, str], bytes]:
    n = next(_addresses)
    environ = {
        "RAW_URI": case.path + ("?" + case.query if case.query else ""),
        # One address per request, so the admin API's per-address failure throttle never answers the
        # authorization matrix with a 429 in place of the 401 under test.
        "REMOTE_ADDR": f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}",
        "CONTENT_LENGTH": str(len(case.body)) if case.content_length is None else case.content_length,
        "CONTENT_TYPE": case.content_type or "",
    }
    for name, value in case.headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    # granian unquotes the path and passes it on as latin-1 text of the raw bytes (PEP 3333).
    path_info = unquote_to_bytes(case.path).decode("latin-1")
    status, headers, body = wsgi_run(
        application, path_info, method=case.method, body=case.body, query=case.query, **environ
    )
    return int(status.split()[0]), dict(headers), body


def answer_key(headers: dict[str, str], body: bytes) -> bytes:
    """What must be the same in every 401 of a surface: body, content type, challenge."""
    return b"|".join([body, headers.get("Content-Type", "").encode(), headers.get("WWW-Authenticate", "").encode()])


def surface(path: str) -> str | None:
    decoded = unquote_to_bytes(path).decode("latin-1")
    if decoded.startswith("/api/scim/") and decoded.rstrip("/").endswith(TOKEN_TAIL) and decoded.count("/") <= 7:
        return "token"  # /api/scim/v2.0/<id>/oauth/token[/]: a directory's OAuth token endpoint (RFC 6749)
    if decoded.startswith("/api/scim/") or decoded == "/api/scim":
        return "scim"
    if decoded.startswith(("/api/v1/", "/auditlog/")) or decoded in ("/api/v1", "/auditlog"):
        return "auditlog" if decoded.startswith("/auditlog") else "rest"
    return None


def format_problem(case: Case, status: int, headers: dict[str, str], body: bytes) -> str | None:
    """What is wrong with the answer's format for the path's surface, or None."""
    kind = surface(case.path)
    if kind is None:
        return None
    content_type = headers.get("Content-Type", "")
    if case.method == "HEAD" or (status == 204 and not body) or 300 <= status < 400:
        return None
    if b"<html" in body[:512].lower() or b"<!doctype" in body[:512].lower():
        return f"HTML body {body[:80]!r}"
    try:
        document = json.loads(body)
    except ValueError:
        return f"not JSON: {content_type} {body[:80]!r}"
    if kind == "token":
        if content_type != JSON_CT:
            return f"token endpoint answer as {content_type!r}"
        wanted = {"access_token", "token_type", "expires_in"} if status == 200 else {"error", "error_description"}
        if not isinstance(document, dict) or not wanted <= set(document) or headers.get("Cache-Control") != "no-store":
            return f"not an RFC 6749 answer: {body[:160]!r}"
        return None
    if kind == "scim":
        if content_type != SCIM_CT:
            return f"SCIM answer as {content_type!r}"
        if status >= 400 and (
            not isinstance(document, dict)
            or document.get("schemas") != [ERROR_URN]
            or document.get("status") != str(status)
        ):
            return f"not a SCIM error: {body[:160]!r}"
        return None
    decoded = unquote_to_bytes(case.path).decode("latin-1")
    if status < 300 and (decoded == "/api/v1/schema" or decoded.endswith("/user/_login")):
        # The two documented exceptions to the envelope: the OpenAPI document and the login answer
        # ({user, token, adminToken}); their errors are enveloped like the rest.
        return None
    if not content_type.startswith(JSON_CT):
        return f"envelope answer as {content_type!r}"
    if not isinstance(document, dict) or set(document) != {"data", "error"}:
        return f"not the envelope: {body[:160]!r}"
    if status >= 400 and (document["error"] is None or document["data"] is not None):
        return f"an error without error: {body[:160]!r}"
    return None


SNAPSHOT_MODELS = (Directory, DirectoryUser, DirectoryGroup, GroupMembership, WebhookEvent, ApiKey)


def snapshot() -> str:
    """A digest of every row a request could change: directories, users, groups, memberships, outbox.

    On PostgreSQL one query digests every table where the rows are (a few thousand cases each take a
    snapshot, so six round trips and Python-side formatting would dominate the module's runtime)."""
    if connection.vendor == "postgresql":
        parts = " UNION ALL ".join(
            f"SELECT '{m._meta.db_table}', count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
            f"FROM {m._meta.db_table} t"
            for m in SNAPSHOT_MODELS
        )
        with connection.cursor() as cursor:
            cursor.execute(parts)
            return repr(cursor.fetchall())
    digest = hashlib.sha256()
    for model in SNAPSHOT_MODELS:
        rows = list(model.objects.order_by("pk").values_list())
        digest.update(f"{model.__name__}:{len(rows)}:{rows!r}".encode())
    return digest.hexdigest()


class Runner:
    """Sends cases, checks each answer and keeps the failures, so one run lists all of them."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0
        self.state = snapshot()
        self.answers: list[tuple[Case, int, dict[str, str], bytes]] = []

    def run(self, case: Case, *, expect: tuple[int, ...] | None = None) -> tuple[int, dict[str, str], bytes]:
        self.count += 1
        try:
            status, headers, body = send(case)
        except Exception as error:  # noqa: BLE001 - an exception out of the WSGI app is a failure to list
            self.failures.append(f"{case.label()}: raised {error!r}")
            connection.close()
            return 599, {}, b""
        self.answers.append((case, status, headers, body))
        if status >= 500:
            self.failures.append(f"{case.label()}: {status} {body[:200]!r}")
        problem = format_problem(case, status, headers, body)
        if problem:
            self.failures.append(f"{case.label()}: {status} {problem}")
        if expect is not None and status not in expect:
            self.failures.append(f"{case.label()}: {status}, expected one of {expect}: {body[:160]!r}")
        # The worker's fan-out (contract §5.2) marks a write's events matched after it commits: let it
        # finish, so the rows it touches count with the write that recorded them, not with the next case.
        drain_pool.drain(timeout=10)
        after = snapshot()
        if after != self.state and (status >= 400 or case.method in ("GET", "HEAD", "OPTIONS")):
            self.failures.append(f"{case.label()}: {status} changed rows")
        self.state = after
        return status, headers, body

    def check(self) -> None:
        assert self.count > 0
        print(f"{self.count} cases")
        assert not self.failures, f"{len(self.failures)} of {self.count} cases failed:\n" + "\n".join(
            self.failures[:60]
        )


# --- generators ----------------------------------------------------------------------------------


def scim_base(world: World) -> str:
    return f"/api/scim/v2.0/{world.a.id}"


def scim_case(world: World, method: str, path: str, body: bytes | str | None = None, **kw: Any) -> Case:
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else (body or b"")
    headers = {"Authorization": f"Bearer {world.a.scim_secret}", **kw.pop("headers", {})}
    content_type = kw.pop("content_type", SCIM_CT if body is not None else None)
    return Case(method, scim_base(world) + path, body=raw, headers=headers, content_type=content_type, **kw)


def rest_case(world: World, method: str, path: str, body: bytes | str | None = None, **kw: Any) -> Case:
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else (body or b"")
    headers = {"Authorization": f"Bearer {API_KEY}", **kw.pop("headers", {})}
    content_type = kw.pop("content_type", JSON_CT if body is not None else None)
    return Case(method, path, body=raw, headers=headers, content_type=content_type, **kw)


def admin_case(world: World, method: str, path: str, body: bytes | str | None = None, **kw: Any) -> Case:
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else (body or b"")
    headers = {"Authorization": world.admin_header, **kw.pop("headers", {})}
    content_type = kw.pop("content_type", JSON_CT if body is not None else None)
    return Case(method, "/auditlog/admin/v1/" + path, body=raw, headers=headers, content_type=content_type, **kw)


def user_doc(user_name: str = "zed@example.com", **extra: Any) -> dict[str, Any]:
    return {
        "schemas": [USER_URN],
        "userName": user_name,
        "name": {"givenName": "Zed", "familyName": "Doe"},
        "emails": [{"primary": True, "value": user_name, "type": "work"}],
        "active": True,
        **extra,
    }


def with_raw(document: Any, marker: str, raw: str) -> str:
    """The document as JSON text with the string `"<marker>"` replaced by raw JSON text."""
    return json.dumps(document).replace(json.dumps(marker), raw)


MARK = "@@RAW@@"


def scim_body_positions(world: World) -> Iterator[tuple[str, str, Any]]:
    """(method, path, document with MARK) for every body position of every SCIM write."""
    user, group = world.user_a, world.group_a
    user_positions: list[Any] = [
        user_doc(userName=MARK),
        user_doc(externalId=MARK),
        user_doc(active=MARK),
        user_doc(name={"givenName": MARK}),
        user_doc(emails=[{"value": MARK, "primary": True}]),
        user_doc(emails=[{"value": "x@example.com", "primary": MARK}]),
        user_doc(emails=MARK),
        user_doc(schemas=[MARK]),
        user_doc(schemas=MARK),
        user_doc(**{ENTERPRISE_URN: {"employeeNumber": MARK, "manager": {"value": MARK}}}),
        user_doc(phoneNumbers=[{"value": MARK}]),
        user_doc(id=MARK),
        user_doc(meta={"version": MARK}),
        user_doc(**{MARK: 1}),
    ]
    for doc in user_positions:
        yield "POST", "/Users", doc
        yield "PUT", f"/Users/{user}", doc
    group_positions: list[Any] = [
        {"schemas": [GROUP_URN], "displayName": MARK},
        {"schemas": [GROUP_URN], "displayName": "G", "externalId": MARK},
        {"schemas": [GROUP_URN], "displayName": "G", "members": [{"value": MARK}]},
        {"schemas": [GROUP_URN], "displayName": "G", "members": MARK},
        {"schemas": [GROUP_URN], "displayName": "G", "members": [{"value": user, "display": MARK}]},
    ]
    for doc in group_positions:
        yield "POST", "/Groups", doc
        yield "PUT", f"/Groups/{group}", doc
    for path in ("active", "userName", "name.givenName", 'emails[type eq "work"].value', None, MARK):
        op: dict[str, Any] = {"op": "replace", "value": MARK}
        if path is not None:
            op["path"] = path
        yield "PATCH", f"/Users/{user}", {"schemas": [PATCH_URN], "Operations": [op]}
    yield (
        "PATCH",
        f"/Users/{user}",
        {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "value": {"active": MARK}}]},
    )
    yield (
        "PATCH",
        f"/Users/{user}",
        {"schemas": [PATCH_URN], "Operations": [{"op": MARK, "path": "active", "value": True}]},
    )
    yield (
        "PATCH",
        f"/Groups/{group}",
        {"schemas": [PATCH_URN], "Operations": [{"op": "add", "path": "members", "value": [{"value": MARK}]}]},
    )
    yield (
        "PATCH",
        f"/Groups/{group}",
        {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "displayName", "value": MARK}]},
    )
    yield (
        "PATCH",
        f"/Groups/{group}",
        {"schemas": [PATCH_URN], "Operations": [{"op": "remove", "path": f'members[value eq "{MARK}"]'}]},
    )
    for search in ("/Users/.search", "/Groups/.search", "/.search"):
        for key in ("startIndex", "count", "filter", "attributes", "excludedAttributes", "sortBy"):
            yield "POST", search, {"schemas": [SEARCH_URN], key: MARK}


def numbers_cases(world: World) -> Iterator[Case]:
    for method, path, doc in scim_body_positions(world):
        for number in BODY_NUMBERS:
            yield scim_case(world, method, path, with_raw(doc, MARK, number))
    for name in ("startIndex", "count"):
        for number in NUMBERS_TEXT:
            for path in ("/Users", "/Groups"):
                yield scim_case(world, "GET", path, query=f"{name}={quote(number)}")
    for name in ("page", "pageLimit", "pageSize", "limit", "offset", "before", "after"):
        for number in NUMBERS_TEXT:
            q = f"tenant=acme&product=crm&{name}={quote(number)}"
            yield rest_case(world, "GET", "/api/v1/directory-sync/users", query=q)
            yield rest_case(
                world, "GET", f"/api/v1/directory-sync/{world.a.id}/events", query=f"{name}={quote(number)}"
            )
    for number in NUMBERS_TEXT:
        for field_name in ("name", "tenant", "product", "webhook_url", "log_webhook_events", "type"):
            doc = {"name": "N", "tenant": "t1", "product": "p1", field_name: MARK}
            yield rest_case(world, "POST", "/api/v1/directory-sync", with_raw(doc, MARK, number))
            yield rest_case(
                world, "PATCH", f"/api/v1/directory-sync/{world.a.id}", with_raw({field_name: MARK}, MARK, number)
            )
        yield admin_case(
            world, "POST", "directories", with_raw({"name": MARK, "tenant": "t", "product": "p"}, MARK, number)
        )
        yield admin_case(world, "PATCH", f"directories/{world.a.id}", with_raw({"name": MARK}, MARK, number))
        yield admin_case(world, "GET", "audit", query=f"page={quote(number)}")
        yield admin_case(world, "GET", f"directories/{world.a.id}/users", query=f"pageLimit={quote(number)}")
        login = {"claims": {"upstreamToken": MARK, "email": "ops@example.com"}}
        yield Case(
            "POST",
            "/auditlog/admin/v1/user/_login",
            "",
            with_raw(login, MARK, number).encode(),
            {"Authorization": f"token={ROOT}"},
            JSON_CT,
        )


def strings_cases(world: World) -> Iterator[Case]:
    for grower, length in itertools.product(GROWERS, LENGTHS):
        text = grower * length
        yield scim_case(world, "POST", "/Users", json.dumps(user_doc(text)))
        yield scim_case(world, "POST", "/Users", json.dumps(user_doc(f"u{length}@x", externalId=text)))
        yield scim_case(world, "POST", "/Users", json.dumps(user_doc(f"v{length}@x", name={"givenName": text})))
        yield scim_case(world, "POST", "/Groups", json.dumps({"schemas": [GROUP_URN], "displayName": text}))
        patch = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "userName", "value": text}]}
        yield scim_case(world, "PATCH", f"/Users/{world.user_a}", json.dumps(patch))
        yield scim_case(world, "GET", "/Users", query="filter=" + quote(f'userName eq "{text}"'))
        yield rest_case(
            world, "POST", "/api/v1/directory-sync", json.dumps({"name": text, "tenant": text[:150], "product": "p"})
        )
        yield rest_case(
            world, "POST", "/api/v1/directory-sync", json.dumps({"name": "n", "tenant": text, "product": "p"})
        )
        yield rest_case(world, "GET", "/api/v1/directory-sync/users", query=f"tenant={quote(text)}&product=crm")
        yield admin_case(world, "PATCH", f"directories/{world.a.id}", json.dumps({"product": text}))


def bad_text_cases(world: World) -> Iterator[Case]:
    for method, path, doc in scim_body_positions(world):
        for bad in BAD_TEXT:
            yield scim_case(world, method, path, with_raw(doc, MARK, json.dumps("x")[:-1] + bad + '"'))
    for bad in BAD_TEXT:
        for field_name in ("name", "tenant", "product", "webhook_url", "webhook_secret"):
            doc = {"name": "N", "tenant": "t1", "product": "p1", field_name: MARK}
            yield rest_case(world, "POST", "/api/v1/directory-sync", with_raw(doc, MARK, f'"{bad}"'))
            yield rest_case(
                world, "PATCH", f"/api/v1/directory-sync/{world.a.id}", with_raw({field_name: MARK}, MARK, f'"{bad}"')
            )
            yield admin_case(world, "POST", "directories", with_raw(doc, MARK, f'"{bad}"'))
        yield rest_case(
            world, "POST", "/api/v1/directory-sync", '{"name": "n", "tenant": "t", "product": "p", "' + bad + '": 1}'
        )
        login = {"claims": {"upstreamToken": "x", "email": MARK}}
        yield Case(
            "POST",
            "/auditlog/admin/v1/user/_login",
            "",
            with_raw(login, MARK, f'"{bad}"').encode(),
            {"Authorization": f"token={ROOT}"},
            JSON_CT,
        )
        yield admin_case(world, "POST", "users", with_raw({"email": MARK}, MARK, f'"{bad}"'))
    for bad in BAD_QUERY:
        # filter literals, attribute names, path segments, query names and values
        for filt in (f'userName eq "{bad}"', f'{bad} eq "x"', f'emails[value eq "{bad}"]', f"name.{bad} pr"):
            yield scim_case(world, "GET", "/Users", query="filter=" + filt.replace(" ", "%20").replace('"', "%22"))
        yield scim_case(world, "GET", f"/Users/{bad}")
        yield scim_case(world, "GET", f"/{bad}")
        yield scim_case(world, "DELETE", f"/Groups/{bad}")
        yield Case("GET", f"/api/scim/v2.0/{bad}/Users", headers={"Authorization": f"Bearer {world.a.scim_secret}"})
        yield scim_case(world, "GET", "/Users", query=f"attributes={bad}")
        yield scim_case(world, "GET", "/Users", query=f"{bad}=1")
        yield scim_case(world, "GET", "/Users", query=f"count=1{bad}")
        yield rest_case(world, "GET", "/api/v1/directory-sync/users", query=f"tenant={bad}&product=crm")
        yield rest_case(world, "GET", "/api/v1/directory-sync/users", query=f"tenant=acme&product=crm&{bad}={bad}")
        yield rest_case(world, "GET", f"/api/v1/directory-sync/{bad}")
        yield rest_case(world, "GET", f"/api/v1/dsync/users/{bad}", query="tenant=acme&product=crm")
        yield rest_case(world, "GET", f"/api/v1/directory-sync/groups/{bad}", query="tenant=acme&product=crm")
        yield rest_case(world, "DELETE", f"/api/v1/directory-sync/{bad}")
        yield rest_case(world, "GET", f"/api/v1/directory-sync/{world.a.id}/events", query=f"status={bad}")
        yield admin_case(world, "GET", f"directories/{bad}")
        yield admin_case(world, "GET", "audit", query=f"{bad}={bad}")
        yield admin_case(world, "DELETE", f"token/{bad}")
    # Header values: raw bytes a client can put on the wire (latin-1 text in the WSGI environ).
    raw_values = ["\x00", "\xed\xa0\x80", "\xff\xfe", "\\u0000", "%00", "\x7f", "é" * 3]
    for value in raw_values:
        for auth in (f"Bearer {value}", f"Bearer {world.a.scim_secret}{value}", value):
            yield scim_case(world, "GET", "/Users", headers={"Authorization": auth})
            yield rest_case(world, "GET", "/api/v1/directory-sync", headers={"Authorization": auth})
            yield admin_case(world, "GET", "directories", headers={"Authorization": auth})
        for target in ("scim", "rest", "admin"):
            headers = {"X-Request-Id": value}
            if target == "scim":
                yield scim_case(world, "GET", "/Users", headers=headers)
                yield scim_case(world, "POST", "/Users", "{", headers=headers)
            elif target == "rest":
                yield rest_case(world, "GET", "/api/v1/directory-sync/nope", headers=headers)
            else:
                yield admin_case(world, "GET", "nope", headers=headers)
        ct = f"application/scim+json; charset={value}"
        yield scim_case(world, "POST", "/Users", json.dumps(user_doc("ct@x")), content_type=ct)
        yield rest_case(
            world, "POST", "/api/v1/directory-sync", '{"name":"n"}', content_type=f"application/json{value}"
        )


def content_cases(world: World) -> Iterator[Case]:
    good = json.dumps(user_doc("len@example.com")).encode()
    content_types = [
        "",
        "text/plain",
        "text/html",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/json; charset=utf-16",
        "application/json; charset=nope",
        "application/scim+json; charset=utf-32",
        "application/scim+json; charset=",
        "application/scim+json;;;",
        "application/" + "x" * 8000,
        "application/json; " + "a=b; " * 2000,
        "*/*",
        "application/xml",
        "application",
        ";",
        "application/scim+json; charset=utf-8; charset=latin-1",
    ]
    lengths = [
        "0",
        "1",
        "5",
        str(len(good) - 1),
        str(len(good) + 10),
        "99999999",
        "-1",
        "abc",
        "1e3",
        " 12",
        "",
        "0x10",
    ]
    for ct in content_types:
        yield scim_case(world, "POST", "/Users", good, content_type=ct)
        yield scim_case(
            world,
            "PATCH",
            f"/Users/{world.user_a}",
            b'{"schemas":["' + PATCH_URN.encode() + b'"],"Operations":[]}',
            content_type=ct,
        )
        yield rest_case(
            world, "POST", "/api/v1/directory-sync", b'{"name":"n","tenant":"t","product":"p"}', content_type=ct
        )
        yield admin_case(world, "POST", "directories", b'{"name":"n","tenant":"t","product":"p"}', content_type=ct)
        yield Case(
            "POST",
            "/auditlog/admin/v1/user/_login",
            "",
            b'{"claims":{"upstreamToken":"u","email":"a@b.c"}}',
            {"Authorization": f"token={ROOT}"},
            ct,
        )
    for length in lengths:
        yield scim_case(world, "POST", "/Users", good, content_length=length)
        yield scim_case(world, "PUT", f"/Users/{world.user_a}", good, content_length=length)
        yield rest_case(
            world, "PATCH", f"/api/v1/directory-sync/{world.a.id}", b'{"name":"renamed"}', content_length=length
        )
        yield admin_case(
            world, "POST", "directories", b'{"name":"n","tenant":"t","product":"p"}', content_length=length
        )
    shapes: list[bytes] = [
        b"",
        b" ",
        b"null",
        b"true",
        b"0",
        b"-0",
        b'"text"',
        b"[]",
        b"[{}]",
        b"{}",
        b"{",
        b"}",
        b"\xef\xbb\xbf{}",
        b"\xff\xfe{\x00}\x00",
        b'{"userName":"a@x","userName":"b@x","schemas":["' + USER_URN.encode() + b'"]}',
        b'{"schemas":["' + USER_URN.encode() + b'"],"schemas":[]}',
        b"[" * 100000 + b"]" * 100000,
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b'{"schemas":["' + USER_URN.encode() + b'"],"userName":"big@x","x":"' + b"a" * (1024 * 1024) + b'"}',
        b'{"schemas":["' + USER_URN.encode() + b'"],"userName":"nearly@x","x":"' + b"a" * (1024 * 1024 - 200) + b'"}',
        b"\x00" * 64,
        b'{"userName": "x"} trailing',
        b"{'single': 'quotes'}",
        b'{"n": NaN}',
        b'{"n": Infinity}',
    ]
    for body in shapes:
        yield scim_case(world, "POST", "/Users", body)
        yield scim_case(world, "PUT", f"/Users/{world.user_a}", body)
        yield scim_case(world, "PATCH", f"/Groups/{world.group_a}", body)
        yield scim_case(world, "POST", "/Groups/.search", body)
        yield rest_case(world, "POST", "/api/v1/directory-sync", body)
        yield rest_case(world, "PATCH", f"/api/v1/dsync/{world.a.id}", body)
        yield admin_case(world, "POST", "directories", body)
        yield admin_case(world, "PATCH", f"directories/{world.a.id}", body)
        yield admin_case(world, "POST", "users", body)
        yield Case("POST", "/auditlog/admin/v1/user/_login", "", body, {"Authorization": f"token={ROOT}"}, JSON_CT)


def all_routes(world: World) -> list[tuple[str, str]]:
    """(surface, path) of every route, with real ids."""
    a, s = world.a.id, scim_base(world)
    routes = [
        ("scim", f"{s}/Users"),
        ("scim", f"{s}/Users/{world.user_a}"),
        ("scim", f"{s}/Groups"),
        ("scim", f"{s}/Groups/{world.group_a}"),
        ("scim", f"{s}/Users/.search"),
        ("scim", f"{s}/Groups/.search"),
        ("scim", f"{s}/.search"),
        ("scim", f"{s}/ServiceProviderConfig"),
        ("scim", f"{s}/ResourceTypes"),
        ("scim", f"{s}/ResourceTypes/User"),
        ("scim", f"{s}/Schemas"),
        ("scim", f"{s}/Schemas/{USER_URN}"),
        ("scim", f"{s}/Bulk"),
        ("scim", f"{s}/Me"),
        ("scim", s),
    ]
    for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
        routes += [
            ("rest", prefix),
            ("rest", f"{prefix}/{a}"),
            ("rest", f"{prefix}/users?tenant=acme&product=crm"),
            ("rest", f"{prefix}/users/{world.user_a}?tenant=acme&product=crm"),
            ("rest", f"{prefix}/users/{world.user_a}/groups?tenant=acme&product=crm"),
            ("rest", f"{prefix}/groups?tenant=acme&product=crm"),
            ("rest", f"{prefix}/groups/{world.group_a}?tenant=acme&product=crm"),
            ("rest", f"{prefix}/{a}/events"),
        ]
    routes.append(("rest", "/api/v1/schema"))
    for tail in (
        "directories",
        f"directories/{a}",
        f"directories/{a}/scim-secret",
        f"directories/{a}/webhook-secret",
        f"directories/{a}/users",
        f"directories/{a}/groups",
        f"directories/{a}/events",
        "token",
        "token/00000000-0000-0000-0000-000000000000",
        "users",
        "user/00000000-0000-0000-0000-000000000000",
        "audit",
        "user/_login",
    ):
        routes.append(("admin", "/auditlog/admin/v1/" + tail))
    return routes


def credential(world: World, kind: str) -> str:
    return {
        "scim": f"Bearer {world.a.scim_secret}",
        "rest": f"Bearer {API_KEY}",
        "admin": world.admin_header,
    }[kind]


def split(target: str) -> tuple[str, str]:
    path, _, query = target.partition("?")
    return path, query


METHODS = [
    "GET",
    "HEAD",
    "OPTIONS",
    "TRACE",
    "PROPFIND",
    "CONNECT",
    "FOO",
    "get",
    "POST",
    "PUT",
    "PATCH",
    "DELETE",
    "MKCOL",
    "LOCK",
]


def method_cases(world: World) -> Iterator[Case]:
    for kind, target in all_routes(world):
        path, query = split(target)
        for method in METHODS:
            if method in ("POST", "PUT", "PATCH", "DELETE"):
                continue  # writes with empty bodies are in content_cases; real writes change rows on purpose
            headers = {"Authorization": credential(world, kind) if not path.endswith("_login") else f"token={ROOT}"}
            yield Case(method, path, query, headers=headers)
        # Writes with an empty body and with an empty JSON object on every route.
        for method in ("POST", "PUT", "PATCH"):
            headers = {"Authorization": credential(world, kind) if not path.endswith("_login") else f"token={ROOT}"}
            yield Case(method, path, query, b"", headers, SCIM_CT if kind == "scim" else JSON_CT)


def path_cases(world: World) -> Iterator[Case]:
    a = str(world.a.id)
    scim = {"Authorization": f"Bearer {world.a.scim_secret}"}
    rest = {"Authorization": f"Bearer {API_KEY}"}
    admin = {"Authorization": world.admin_header}
    tricks = [
        ("scim", f"/api/scim/v2.0//{a}/Users"),
        ("scim", f"/api/scim/v2.0/{a}//Users"),
        ("scim", f"/api/scim/v2.0/{a}/./Users"),
        ("scim", f"/api/scim/v2.0/{a}/../{a}/Users"),
        ("scim", f"/api/scim/v2.0/{a}%2FUsers"),
        ("scim", f"/api/scim/v2.0/{a}/Users%2F{world.user_a}"),
        ("scim", f"/api/scim/v2.0/{a}/Users/"),
        ("scim", f"/api/scim/v2.0/{a}/Users/{world.user_a}/"),
        ("scim", f"/api/scim/v2.0/{a}/Users/{world.user_a}/extra"),
        ("scim", f"/api/scim/v2.0/{a}/Users/{world.user_a}/extra/more"),
        ("scim", f"/api/scim/v2.0/{a}/Users/{world.user_b}"),
        ("scim", f"/api/scim/v2.0/{a}/Groups/{world.group_b}"),
        ("scim", f"/api/scim/v2.0/{world.b.id}/Users"),
        ("scim", f"/api/scim/v2.0/{a}/Users/{'x' * 10240}"),
        ("scim", f"/api/scim/v2.0/{'x' * 10240}/Users"),
        ("scim", f"/api/scim/v2.0/{a}/{'Users' * 2000}"),
        ("scim", f"/api/scim/v2.0/{a}/Users/%C3%A9%E2%82%AC"),
        ("scim", f"/api/scim/v2.0/{a}/Users/ü"),
        ("scim", f"/api/scim/v2.0/{a}/users"),
        ("scim", f"/api/scim/v2.0/{a}/USERS"),
        ("scim", f"/api/scim/v2.0/{a.upper()}/Users"),
        ("scim", f"/api/scim/v2.0/{a.replace('-', '')}/Users"),
        ("scim", f"/api/scim/v2.0/{{{a}}}/Users"),
        ("scim", "/api/scim/v2.0/"),
        ("scim", "/api/scim/v2.0"),
        ("scim", "/api/scim/"),
        ("scim", "/api/scim/v1/Users"),
        ("scim", f"/api/scim/v2.0/{a}/Users/.search/x"),
        ("scim", f"/api/scim/v2.0/{a}/Users/%2e%2e/Groups"),
        ("scim", f"/api/scim/v2.0/{a}/Schemas/{'urn:' * 2000}"),
        ("scim", f"/api/scim/v2.0/{a}/Users/-1"),
        ("scim", f"/api/scim/v2.0/{a}/Users/99999999999999999999999999"),
        ("rest", f"/api/v1/directory-sync//{a}"),
        ("rest", f"/api/v1/directory-sync/{a}/"),
        ("rest", "/api/v1/directory-sync/"),
        ("rest", f"/api/v1/directory-sync/./{a}"),
        ("rest", f"/api/v1/directory-sync%2F{a}"),
        ("rest", f"/api/v1/directory-sync/{'x' * 10240}"),
        ("rest", f"/api/v1/directory-sync/users/{'x' * 10240}?tenant=acme&product=crm"),
        ("rest", f"/api/v1/directory-sync/users/{world.user_b}?tenant=acme&product=crm"),
        ("rest", f"/api/v1/directory-sync/groups/{world.group_b}?tenant=acme&product=crm"),
        ("rest", f"/api/v1/directory-sync/users/{world.user_a}?tenant=globex&product=crm"),
        ("rest", f"/api/v1/directory-sync/{a}/events/x"),
        ("rest", "/api/v1/directory-sync/%C3%A9"),
        ("rest", "/api/v1/directory-sync/ü"),
        ("rest", "/api/v1/"),
        ("rest", "/api/v1"),
        ("rest", "/api/v1/schema/"),
        ("rest", "/api/v1/nothing/here"),
        ("rest", "/api/v1/directory-sync/-1"),
        ("rest", "/api/v1/directory-sync/99999999999999999999999999"),
        ("admin", f"/auditlog/admin/v1/directories/{'x' * 10240}"),
        ("admin", "/auditlog/admin/v1/directories/"),
        ("admin", f"/auditlog/admin/v1//directories/{a}"),
        ("admin", f"/auditlog/admin/v1/directories%2F{a}"),
        ("admin", "/auditlog/admin/v1/token/-1"),
        ("admin", "/auditlog/admin/v1/user/ü"),
        ("admin", "/auditlog/admin/v1/user/99999999999999999999999999"),
        ("admin", "/auditlog/"),
        ("admin", "/auditlog"),
        ("admin", "/auditlog/admin/v2/directories"),
    ]
    for kind, target in tricks:
        path, query = split(target)
        headers = {"scim": scim, "rest": rest, "admin": admin}[kind]
        for method in ("GET", "DELETE", "PATCH"):
            body = b'{"schemas":["' + PATCH_URN.encode() + b'"],"Operations":[{"op":"remove","path":"members"}]}'
            yield Case(
                method,
                path,
                query,
                body if method == "PATCH" else b"",
                headers,
                (SCIM_CT if kind == "scim" else JSON_CT) if method == "PATCH" else None,
            )


def query_cases(world: World) -> Iterator[Case]:
    many = "&".join(f"k{i}=v" for i in range(1200))
    repeated = "&".join(["count=1"] * 1200)
    queries = [
        "count=1&count=2",
        "startIndex=1&startIndex=x",
        "filter=userName%20pr&filter=active%20pr",
        "attributes=userName&attributes=x",
        "count[]=1",
        "filter[]=x",
        "attributes[userName]=1",
        many,
        repeated,
        "&&&&",
        "=",
        "==",
        "=x",
        "count",
        "count=",
        "a=%",
        "a=%zz&b=%2",
        "%FF%FE=1",
        "\xff=\xfe",
        "count=%EF%BC%91",
        "count=%D9%A1",
        "count=1%00",
        "count=%20%201",
        "count=+1",
        "count=0x10",
        "count=1_000",
        "startIndex=-0",
        "sortBy=%00",
        "sortOrder=sideways",
        "sortOrder=%ED%A0%80",
        "x" * 20000,
        "filter=" + "a" * 20000,
    ]
    for q in queries:
        yield scim_case(world, "GET", "/Users", query=q)
        yield scim_case(world, "GET", "/Groups", query=q)
        yield scim_case(world, "GET", f"/Users/{world.user_a}", query=q)
        yield scim_case(world, "GET", "/Schemas", query=q)
        yield rest_case(world, "GET", "/api/v1/directory-sync", query=q)
        yield rest_case(world, "GET", "/api/v1/dsync/users", query="tenant=acme&product=crm&" + q)
        yield rest_case(world, "GET", "/api/v1/directory-sync/groups", query=q)
        yield rest_case(world, "GET", f"/api/v1/directory-sync/{world.a.id}/events", query=q)
        yield rest_case(world, "GET", "/api/v1/schema", query=q)
        yield admin_case(world, "GET", "audit", query=q)
        yield admin_case(world, "GET", f"directories/{world.a.id}/users", query=q)
    rest_params = {
        "tenant": ["", "acme", "globex", "%00", "a" * 300],
        "product": ["", "crm", "x" * 300],
        "directory": ["", str(world.a.id), str(world.b.id), "nope", "%00"],
        "pageLimit": ["-1", "0", "1", "1000", "1001", "abc", "1.5", "", "9" * 30],
        "page": ["-1", "0", "1", "abc", "9" * 30, ""],
        "pageSize": ["-1", "0", "x"],
        "before": ["x", "", "-1"],
        "after": ["x", "", "-1"],
        "group": ["x", str(world.group_a), str(world.group_b), "%00", str(world.group_a).replace("-", "")],
        "active": ["yes", "", "TRUE", "true", "%00", "1"],
        "email": ["", "%00", "a" * 600, "ANN@A.EXAMPLE", "%ED%A0%80", "%25"],
        "updatedAfter": [
            "x",
            "",
            "2024-01-01",
            "2024-01-01T00:00:00",
            "9999-99-99T99:99:99Z",
            "2024-01-01T00:00:00+99:00",
            "2024-01-01T00:00:00.1234567Z",
            "%ED%A0%80",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59-23:59",
        ],
        "name": ["", "%00", "x" * 600, "ENG", " "],
        "status": ["x", "failed", "delivered", "%00"],
        "failed": ["x", "true", "false", "2", ""],
        "order": ["x", "asc", "desc"],
    }
    for name, values in rest_params.items():
        for value in values:
            for route in ("users", "groups"):
                yield rest_case(
                    world, "GET", f"/api/v1/directory-sync/{route}", query=f"tenant=acme&product=crm&{name}={value}"
                )
            yield rest_case(world, "GET", "/api/v1/directory-sync", query=f"{name}={value}")
            yield rest_case(world, "GET", f"/api/v1/dsync/{world.a.id}/events", query=f"{name}={value}")
            yield admin_case(world, "GET", "directories", query=f"{name}={value}")
            yield admin_case(world, "GET", f"directories/{world.a.id}/groups", query=f"{name}={value}")
            yield admin_case(world, "GET", f"directories/{world.a.id}/events", query=f"{name}={value}")


USER_ATTRIBUTES = [
    "id",
    "externalId",
    "userName",
    "active",
    "displayName",
    "name.givenName",
    "name.familyName",
    "name",
    "emails",
    "emails.value",
    "emails.type",
    "emails.primary",
    "meta.created",
    "meta.lastModified",
    "meta.resourceType",
    "groups",
    "groups.value",
    f"{USER_URN}:userName",
    f"{USER_URN}:name.givenName",
    f"{ENTERPRISE_URN}:employeeNumber",
    f"{ENTERPRISE_URN}:manager.value",
    "nosuch",
    "urn:x:y:nosuch",
    "emails.nosuch",
    "name.givenName.deeper",
]
OPERATORS = ["eq", "ne", "co", "sw", "ew", "gt", "le", "pr", "EQ", "xx"]
OP_LITERALS = ['"x"', "9223372036854775808", '"']  # every operator gets these
LITERALS = ['"x"', "true", "null", "-1", "1.5", "9223372036854775808", "1e309", '"2024-01-01T00:00:00Z"', "[]", '"']


def filter_cases(world: World) -> Iterator[Case]:
    def get(path: str, expression: str) -> Case:
        return scim_case(world, "GET", path, query="filter=" + quote(expression, safe=""))

    def search(path: str, expression: str) -> Case:
        return scim_case(world, "POST", path, json.dumps({"schemas": [SEARCH_URN], "filter": expression}))

    for attribute in USER_ATTRIBUTES:
        for op in OPERATORS:
            for literal in OP_LITERALS if op != "pr" else [""]:
                yield get("/Users", f"{attribute} {op} {literal}".strip())
        for literal in LITERALS:
            yield get("/Users", f"{attribute} eq {literal}")
        yield get("/Groups", f'{attribute} eq "x"')
    for attribute in (
        "displayName",
        "members",
        "members.value",
        "members.display",
        "externalId",
        "id",
        f"{GROUP_URN}:displayName",
    ):
        for op in OPERATORS:
            yield get("/Groups", f'{attribute} {op} "x"')
    expressions = [
        "(" * 40 + 'userName eq "x"' + ")" * 40,
        "(" * 5000 + 'userName eq "x"' + ")" * 5000,
        "(" * 20,
        ")" * 20,
        " or ".join(f'userName eq "u{i}"' for i in range(2000)),
        " and ".join(f'userName eq "u{i}"' for i in range(300)),
        " or ".join(f'userName eq "u{i}"' for i in range(150)),
        'not userName eq "x"',
        'not (userName eq "x")',
        "not not (userName pr)",
        "not",
        'emails[value eq "x"]',
        'emails[type eq "work" and value co "@"]',
        'emails[value eq "x" or emails[value eq "y"]]',
        'emails[emails[value eq "x"]]',
        'emails[not (value eq "x")]',
        "emails[]",
        "emails[",
        'emails[value eq "x"].value eq "y"',
        'members[value eq "x"]',
        f'{USER_URN}:emails[value eq "x"]',
        f'{ENTERPRISE_URN}:manager[value eq "x"]',
        'userName eq "a\\"b"',
        'userName eq "\\u0000"',
        'userName eq "\\ud800"',
        'userName eq "\\x"',
        'userName eq "\x00"',
        "userName eq 'single'",
        'userName  eq  "x"',
        '\tuserName\teq\t"x"',
        "userName eq",
        'eq "x"',
        'userName eq "x" or',
        'userName eq "x" and and userName pr',
        'userName eq "x" extra',
        "",
        " ",
        "a" * 5000,
        'userName eq "' + "ß" * 3000 + '"',
        'meta.lastModified gt "not a date"',
        'meta.lastModified gt "9999-99-99T99:99:99Z"',
        'meta.created gt "2024-01-01T00:00:00+99:00"',
        'meta.created gt "9999-12-31T23:59:59-23:59"',
        'meta.lastModified lt "0001-01-01T00:00:00+23:59"',
        "active eq True",
        'active eq "true"',
        'id eq "not-a-uuid"',
        f'id eq "{world.user_b}"',
        'userName sw ""',
        'userName co "%"',
        'userName co "_"',
        'userName co "\\\\"',
    ]
    for expression in expressions:
        for path in ("/Users", "/Groups"):
            yield get(path, expression)
        yield search("/Users/.search", expression)
        yield search("/.search", expression)
    for query in (
        "filter=%ED%A0%80",
        "filter=userName%20eq%20%22%ED%A0%80%22",
        "filter=userName%20eq%20%22%FF%22",
        "filter=%00",
    ):
        yield scim_case(world, "GET", "/Users", query=query)


def patch_cases(world: World) -> Iterator[Case]:
    user, group = world.user_a, world.group_a
    ops = ["add", "replace", "remove", "REPLACE"]
    user_paths: list[Any] = [
        None,
        "",
        "active",
        "userName",
        "externalId",
        "displayName",
        "name",
        "name.givenName",
        "emails",
        'emails[type eq "work"]',
        'emails[type eq "work"].value',
        'emails[value eq "x"].primary',
        "emails.value",
        f"{USER_URN}:userName",
        f"{USER_URN}:name.familyName",
        f"{ENTERPRISE_URN}:employeeNumber",
        f"{ENTERPRISE_URN}:manager",
        f"{ENTERPRISE_URN}:manager.value",
        ENTERPRISE_URN,
        "id",
        "meta",
        "meta.created",
        "schemas",
        "groups",
        "nosuch",
        "nosuch.deeper",
        "emails[",
        'emails[value eq "x"',
        'emails[emails[value eq "x"]]',
        "name..givenName",
        "a" * 5000,
        1,
        ["active"],
    ]
    values: list[Any] = [None, True, 1.5, "x", {"active": False}]
    for op, path, value in itertools.product(ops, user_paths, values):
        operation: dict[str, Any] = {}
        if op is not None:
            operation["op"] = op
        if path is not None:
            operation["path"] = path
        operation["value"] = value
        document = {"schemas": [PATCH_URN], "Operations": [operation]}
        yield scim_case(world, "PATCH", f"/Users/{user}", json.dumps(document))
    group_paths: list[Any] = [
        None,
        "members",
        f'members[value eq "{world.user_a}"]',
        f'members[value eq "{world.user_b}"]',
        'members[value eq "x"]',
        "members.value",
        "displayName",
        "externalId",
        "members[",
        "nosuch",
    ]
    group_values: list[Any] = [
        None,
        [],
        [{"value": world.user_b}],
        [{"value": "nope"}],
        {"value": world.user_a},
        "x",
    ]
    for op, path, value in itertools.product(ops, group_paths, group_values):
        operation = {}
        if op is not None:
            operation["op"] = op
        if path is not None:
            operation["path"] = path
        operation["value"] = value
        yield scim_case(
            world, "PATCH", f"/Groups/{group}", json.dumps({"schemas": [PATCH_URN], "Operations": [operation]})
        )
    # Operations that are no PATCH operation at all, on a few paths.
    for op, path in itertools.product(["move", "copy", "test", "", None, 1], [None, "active", "members"]):
        operation = {"value": True} if op is None else {"op": op, "value": True}
        if path is not None:
            operation["path"] = path
        target = f"/Groups/{group}" if path == "members" else f"/Users/{user}"
        yield scim_case(world, "PATCH", target, json.dumps({"schemas": [PATCH_URN], "Operations": [operation]}))
    envelopes: list[Any] = [
        {"schemas": [PATCH_URN]},
        {"schemas": [PATCH_URN], "Operations": None},
        {"schemas": [PATCH_URN], "Operations": {}},
        {"schemas": [PATCH_URN], "Operations": "x"},
        {"schemas": [PATCH_URN], "Operations": [None]},
        {"schemas": [PATCH_URN], "Operations": [[]]},
        {"schemas": [PATCH_URN], "Operations": [1]},
        {"schemas": [], "Operations": [{"op": "replace", "path": "active", "value": False}]},
        {"schemas": ["urn:x"], "Operations": [{"op": "replace", "path": "active", "value": False}]},
        {"Operations": [{"op": "replace", "path": "active", "value": False}]},
        {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "active", "value": False}] * 10000},
        {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "nosuch", "value": 1}] * 10000},
        {
            "schemas": [PATCH_URN],
            "Operations": [{"op": "add", "path": "members", "value": [{"value": world.user_a}]}] * 10000,
        },
        {
            "schemas": [PATCH_URN],
            "Operations": [{"op": "replace", "path": "active", "value": False}],
            "Operations ": [],
        },
    ]
    for document in envelopes:
        yield scim_case(world, "PATCH", f"/Users/{user}", json.dumps(document))
        yield scim_case(world, "PATCH", f"/Groups/{group}", json.dumps(document))
    # A PATCH of another directory's resource through this directory's route never reaches it.
    other = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "active", "value": False}]}
    yield scim_case(world, "PATCH", f"/Users/{world.user_b}", json.dumps(other))
    yield scim_case(world, "DELETE", f"/Users/{world.user_b}")
    yield scim_case(world, "DELETE", f"/Groups/{world.group_b}")


def attributes_cases(world: World) -> Iterator[Case]:
    junk = [
        "",
        ",",
        ",,,",
        " ",
        "userName,",
        ",userName",
        "userName,,name",
        "nosuch",
        "name.nosuch",
        "name.givenName.deeper",
        'emails[type eq "work"]',
        f"{USER_URN}:",
        f"{USER_URN}:nosuch",
        "urn:",
        "urn:x:y",
        ":",
        "..",
        "a" * 10000,
        ",".join(["userName"] * 300),
        ",".join(f"a{i}" for i in range(1000)),
        "%00",
        "%ED%A0%80",
        "%FF",
        "id,schemas,meta",
        "groups.value",
        "members.value",
        "ß" * 600,
    ]
    for value in junk:
        encoded = value if "%" in value else quote(value, safe=",")
        for name in ("attributes", "excludedAttributes"):
            for path in (
                "/Users",
                f"/Users/{world.user_a}",
                "/Groups",
                f"/Groups/{world.group_a}",
                "/Schemas",
                "/ResourceTypes",
            ):
                yield scim_case(world, "GET", path, query=f"{name}={encoded}")
            yield scim_case(world, "POST", "/Users/.search", json.dumps({"schemas": [SEARCH_URN], name: value}))
            yield scim_case(world, "POST", "/Users/.search", json.dumps({"schemas": [SEARCH_URN], name: [value]}))
        yield scim_case(world, "GET", "/Users", query=f"attributes={encoded}&excludedAttributes={encoded}")
    for bad in (1, True, None, {}, [1], [None], [[]], "x" * 10):
        yield scim_case(world, "POST", "/.search", json.dumps({"schemas": [SEARCH_URN], "attributes": bad}))
        yield scim_case(
            world, "POST", "/Groups/.search", json.dumps({"schemas": [SEARCH_URN], "excludedAttributes": bad})
        )
    sorts = ["userName", "nosuch", 'emails[type eq "work"]', "%00", "", "password", "name", "groups.display"]
    sorts += [f"{ENTERPRISE_URN}:manager.value", "urn:x:y:z", "a" * 5000, "meta.version", "members.value", "emails"]
    for sort_by in sorts:
        for order in ("ascending", "descending", "up", ""):
            for path in ("/Users", "/Groups"):
                yield scim_case(world, "GET", path, query=f"sortBy={quote(sort_by, safe='%')}&sortOrder={order}")
        yield scim_case(world, "POST", "/.search", json.dumps({"schemas": [SEARCH_URN], "sortBy": sort_by}))


PRECONDITIONS = [
    "",
    " ",
    "*",
    "**",
    "W/",
    'W/"',
    '"x"',
    'W/"x"',
    'W/"1", "2"',
    '"a" "b"',
    ",,,",
    '"\x00"',
    "\x7f",
    '"' + "a" * 5000 + '"',
    "\xe9\xff",
    'W/"0000000000000000000000000000000000000000000000000000000"',
]


def version_cases(world: World) -> Iterator[Case]:
    """If-Match / If-None-Match (RFC 7644 §3.14) as a client or a proxy may send them. `*` matches an
    existing resource, so it is sent only where the answer must leave the rows as they are."""
    patch = json.dumps({"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "title", "value": "T"}]})
    member = json.dumps(
        {"schemas": [PATCH_URN], "Operations": [{"op": "add", "path": "members", "value": [{"value": "x"}]}]}
    )
    for header in PRECONDITIONS:
        for path in (f"/Users/{world.user_a}", f"/Groups/{world.group_a}", "/Users/00000000-0000-0000-0000-0000000000"):
            yield scim_case(world, "GET", path, headers={"If-None-Match": header})
            yield scim_case(world, "GET", path, headers={"If-Match": header})
            if header == "*":
                continue
            yield scim_case(world, "DELETE", path, headers={"If-Match": header})
            yield scim_case(world, "PUT", path, json.dumps(user_doc(userName=MARK)), headers={"If-Match": header})
        yield scim_case(world, "PATCH", f"/Users/{world.user_b}", patch, headers={"If-Match": header})
        yield scim_case(world, "PATCH", f"/Groups/{world.group_a}", member, headers={"If-Match": header})
        yield scim_case(world, "GET", "/Users", headers={"If-None-Match": header})


def map_cases(world: World) -> Iterator[Case]:
    """A directory's attribute_map and role_map over REST and the admin API: every bad one is a 400
    that saves nothing (the runner checks the rows)."""
    junk: list[Any] = [
        [],
        "x",
        1,
        True,
        {"": "title"},
        {"id": "title"},
        {"custom_attributes": "title"},
        {"ok": ""},
        {"ok": None},
        {"ok": 5},
        {"ok": ["title"]},
        {"ok": "not a path"},
        {"ok": "emails[type co 'x'].value"},
        {"ok": "urn:"},
        {"ok": "a" * 600},
        {"ok": "title\u0000"},
        {"a" * 65: "title"},
        {"é": "title"},
        {f"k{i}": "title" for i in range(101)},
    ]
    roles: list[Any] = [[], "x", {"": "r"}, {"Eng": ""}, {"Eng": " "}, {"Eng": 1}, {"Eng": None}, {"Eng": ["r"]}]
    roles += [
        {"Eng": "r" * 201},
        {"x" * 513: "r"},
        {"Eng\n": "r"},
        {"Eng": "r\u0000"},
        {f"g{i}": "r" for i in range(1001)},
    ]
    bodies = [{"attribute_map": value} for value in junk] + [{"role_map": value} for value in roles]
    bodies += [{"attribute_map": {"ok": "title"}, "role_map": {"Eng": ""}}, {"role_map": {"Eng": "r"}, "name": ""}]
    for body in bodies:
        text = json.dumps(body).replace("\\u0000", "\u0000").replace("\\n", "\n")
        for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
            yield rest_case(world, "PATCH", f"{prefix}/{world.a.id}", text)
        yield admin_case(world, "PATCH", f"directories/{world.a.id}", text)


def admin_cases(world: World) -> Iterator[Case]:
    logins: list[Any] = [
        {},
        {"claims": None},
        {"claims": []},
        {"claims": "x"},
        {"claims": {}},
        {"claims": {"email": "ops@example.com"}},
        {"claims": {"upstreamToken": "x"}},
        {"claims": {"upstreamToken": "x", "email": ""}},
        {"claims": {"upstreamToken": "x", "email": "not-an-email"}},
        {"claims": {"upstreamToken": "x", "email": "a" * 10000 + "@x.com"}},
        {"claims": {"upstreamToken": "x", "email": ["a@x.com"]}},
        {"claims": {"upstreamToken": "x", "email": {"a": 1}}},
        {"claims": {"upstreamToken": "", "email": "a@x.com"}},
        {"claims": {"upstreamToken": "x" * 100000, "email": "a@x.com"}},
        {"claims": {"upstreamToken": "x", "email": "ß" * 300 + "@x.com"}},
        {"claims": {"upstreamToken": "x", "email": "İ" * 300 + "@x.com"}},
    ]
    auths = [
        f"token={ROOT}",
        f"token={ROOT} token={ROOT}",
        f"token={ROOT}x",
        "token=",
        f"Bearer {ROOT}",
        "",
        f"token= {ROOT}",
    ]
    for body, auth in itertools.product(logins, auths):
        yield Case(
            "POST", "/auditlog/admin/v1/user/_login", "", json.dumps(body).encode(), {"Authorization": auth}, JSON_CT
        )
    a = world.a.id
    writes: list[tuple[str, str, Any]] = [
        ("POST", "directories", {}),
        ("POST", "directories", {"name": "", "tenant": "t", "product": "p"}),
        ("POST", "directories", {"name": "n", "tenant": "acme", "product": "crm"}),
        ("POST", "directories", {"name": "n", "tenant": "t", "product": "p", "type": "nosuch"}),
        ("POST", "directories", {"name": "n", "tenant": "t", "product": "p", "webhook_url": "ftp://x"}),
        ("POST", "directories", {"name": "n", "tenant": "t", "product": "p", "webhook_url": "http://127.0.0.1/x"}),
        ("POST", "directories", {"name": "n", "tenant": "t", "product": "p", "webhook_secret": "s"}),
        (
            "POST",
            "directories",
            {"name": "n", "tenant": "t", "product": "p", "webhook_url": "https://" + "a" * 3000 + ".com"},
        ),
        ("POST", "directories", {"name": ["n"], "tenant": "t", "product": "p"}),
        ("POST", "directories", {"name": "n", "tenant": {"x": 1}, "product": "p"}),
        ("PATCH", f"directories/{a}", {"tenant": "globex"}),
        ("PATCH", f"directories/{a}", {"name": None}),
        ("PATCH", f"directories/{a}", {"log_webhook_events": "yes"}),
        ("PATCH", f"directories/{a}", {"type": 1}),
        ("PATCH", f"directories/{a}", {"id": "x"}),
        ("PATCH", f"directories/{a}", {"scim_secret": "x"}),
        ("PATCH", f"directories/{a}", []),
        ("POST", "users", {"email": "not-an-email"}),
        ("POST", "users", {"email": ""}),
        ("POST", "users", {}),
        ("POST", "users", {"email": ["a@x.com"]}),
        ("PATCH", "user/00000000-0000-0000-0000-000000000000", {"timezone": "Mars/Olympus"}),
        ("PATCH", "user/nope", {"timezone": "UTC"}),
        ("PUT", "user/00000000-0000-0000-0000-000000000000", {"timezone": "\u0000"}),
        ("DELETE", "token/00000000-0000-0000-0000-000000000000", None),
        ("DELETE", "token/nope", None),
        ("DELETE", f"token/{'1' * 5000}", None),
        ("POST", f"directories/{world.b.id}x/scim-secret", {}),
        ("POST", "directories/00000000-0000-0000-0000-000000000000/webhook-secret", {}),
        ("DELETE", "directories/00000000-0000-0000-0000-000000000000", None),
        ("DELETE", "directories/nope", None),
    ]
    for method, tail, body in writes:
        yield admin_case(world, method, tail, None if body is None else json.dumps(body))
    for query in (
        "page=0",
        "page=-1",
        "pageLimit=0",
        "pageLimit=100000",
        "action=%00",
        "actor=x",
        "since=not-a-date",
        "since=9999-99-99",
        "until=2024-13-01",
        "page=1&page=2",
        "q=" + "x" * 5000,
    ):
        for tail in ("audit", "directories", f"directories/{a}/users", f"directories/{a}/events", "users", "token"):
            yield admin_case(world, "GET", tail, query=query)


def token_cases(world: World) -> Iterator[Case]:
    """A's OAuth token endpoint (contract §4.3): bodies, encodings, credentials, methods and paths of every
    kind. Each answer is RFC 6749 JSON and changes no row."""
    path = f"/api/scim/v2.0/{world.a.id}{TOKEN_TAIL}"
    a_id, secret = str(world.a.id), world.oauth_secret_a

    def basic(raw: bytes) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(raw).decode()}

    good = basic(f"{a_id}:{secret}".encode())
    grant = b"grant_type=client_credentials"
    yield Case("POST", path, body=grant, headers=good, content_type=FORM_CT)  # a real grant: 200
    bodies = [
        b"",
        b"&",
        b"=",
        b"&&&=&=",
        b"grant_type",
        grant + b"&" + grant,
        grant + b"&scope=" + b"s" * 5000,
        grant + b"&scope=%22",
        grant + b"&client_id=" + a_id.encode() + b"&client_secret=" + secret.encode(),
        grant + b"&client_secret=" + b"x" * 20000,
        b"grant_type=" + b"%" * 50,
        b"grant_type=client_credentials%00",
        b"grant_type=\xff\xfe",
        b"grant_type=\x00",
        b"\xef\xbb\xbfgrant_type=client_credentials",
        b'{"grant_type": "client_credentials"}',
        b"grant_type=client_credentials;client_id=x",
        *(b"grant_type=" + value.encode() for value in BAD_QUERY),
        *(grant + b"&client_id=" + value.encode() + b"&client_secret=x" for value in BAD_QUERY),
        *(grant + b"&scope=" + value.encode() for value in NUMBERS_TEXT[:6]),
        *(grant + b"&" + value.encode() + b"=1" for value in BAD_QUERY),
    ]
    for body in bodies:
        yield Case("POST", path, body=body, headers=good, content_type=FORM_CT)
        yield Case("POST", path, body=body, content_type=FORM_CT)
    headers = [
        {},
        {"Authorization": ""},
        {"Authorization": "Basic"},
        {"Authorization": "Basic ="},
        {"Authorization": "Basic " + "A" * 7000},
        {"Authorization": "Basic \xff\xfe"},
        {"Authorization": "Basic \x00"},
        {"Authorization": f"Bearer {world.token_a}"},
        {"Authorization": f"Bearer {secret}"},
        basic(b""),
        basic(b":"),
        basic(b"no colon"),
        basic(f"{a_id}:".encode()),
        basic(f":{secret}".encode()),
        basic(f"{a_id}:{secret}x".encode()),
        basic(f"{world.b.id}:{secret}".encode()),
        basic(f"{a_id.upper()}:{secret}".encode()),
        basic(b"\xff:\xfe"),
        basic(b"%zz:%"),
        basic(f"{a_id}:{secret}%00".encode()),
        basic(f"{a_id}:{secret}:{secret}".encode()),
    ]
    for header in headers:
        yield Case("POST", path, body=grant, headers=header, content_type=FORM_CT)
    for content_type in ("", JSON_CT, SCIM_CT, "text/plain", f"{FORM_CT}; charset=latin-1", f"{FORM_CT};;", "x/y; a"):
        yield Case("POST", path, body=grant, headers=good, content_type=content_type)
    for length in ("abc", "-1", "1e3", str(10**20), "0"):
        yield Case("POST", path, body=grant, headers=good, content_type=FORM_CT, content_length=length)
    for method in METHODS:
        if method != "POST":
            yield Case(method, path, body=grant if method in ("PUT", "PATCH") else b"", headers=good)
    for other in (f"/api/scim/v2.0/{world.b.id}{TOKEN_TAIL}", f"/api/scim/v2.0/{uuid.uuid4()}{TOKEN_TAIL}"):
        yield Case("POST", other, body=grant, headers=good, content_type=FORM_CT)
    yield Case("POST", f"/api/scim/v2.0/{'x' * 5000}{TOKEN_TAIL}", body=grant, headers=good, content_type=FORM_CT)
    yield Case("POST", path + "/", body=grant, headers=good, content_type=FORM_CT)


# --- the classes ---------------------------------------------------------------------------------

CLASSES = {
    "numbers": numbers_cases,
    "strings": strings_cases,
    "bad_text": bad_text_cases,
    "content": content_cases,
    "methods": method_cases,
    "paths": path_cases,
    "queries": query_cases,
    "filters": filter_cases,
    "patch": patch_cases,
    "attributes": attributes_cases,
    "admin": admin_cases,
    "versions": version_cases,
    "maps": map_cases,
    "token": token_cases,
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_catalogue(name: str, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def unresolved(host: str, port: int) -> list:
        # Webhook URLs in the cases name made-up hosts: their save-time lookup must not leave the machine.
        raise socket.gaierror(socket.EAI_NONAME, "not resolved in tests")

    monkeypatch.setattr("core.outbound.resolve", unresolved)
    runner = Runner()
    for case in CLASSES[name](world):
        runner.run(case)
    runner.check()


# --- authorization matrix ------------------------------------------------------------------------


def wrong_credentials(world: World, kind: str) -> dict[str, str | None]:
    """Every credential that must not open a route of the surface, by what is wrong with it."""
    return {
        "none": None,
        "empty": "",
        "malformed": "Bearer",
        "spaces": "Bearer  a b",
        "scheme_only": "Token",
        "basic": "Basic " + "dXNlcjpwYXNz",
        "basic_of_secret": "Basic " + __import__("base64").b64encode(f"x:{world.a.scim_secret}".encode()).decode(),
        "wrong_secret": "Bearer " + "w" * 43,
        "other_directory": f"Bearer {world.b.scim_secret}" if kind == "scim" else "Bearer " + "o" * 43,
        "api_key_env": f"Bearer {API_KEY}" if kind != "rest" else "Bearer not-the-key",
        "api_key_db": f"Bearer {world.db_key}" if kind != "rest" else "Bearer not-the-db-key",
        "scim_secret": f"Bearer {world.a.scim_secret}" if kind != "scim" else "Bearer not-a-scim-secret",
        "revoked_api_key": f"Bearer {world.revoked_key}",
        "disabled_admin_token": world.disabled_admin_header,
        "admin_jwt_elsewhere": world.admin_bearer if kind != "admin" else "Bearer a.b.c",
        "root_token_only": f"token={ROOT}",
        "nul": "Bearer \x00",
        "latin1": "Bearer \xe9\xff",
        "huge": "Bearer " + "x" * 8000,
        # OAuth access tokens (contract §4.3): another directory's, an expired one, one changed by a character,
        # one of the right shape that is none; on the other surfaces, A's good token too.
        "token_other_directory": f"Bearer {world.token_b}",
        "token_expired": f"Bearer {world.expired_token_a}",
        "token_tampered": f"Bearer {world.token_a[:-1]}{'0' if world.token_a[-1] != '0' else '1'}",
        "token_shaped": "Bearer roster." + "0" * 130,
        "token_elsewhere": f"Bearer {world.token_a}" if kind != "scim" else f"Bearer {world.token_a}x",
        "oauth_client_secret": f"Bearer {world.oauth_secret_a}",
    }


# The credentials also tried on a write of every route (all of them are tried on a read).
WRITE_REASONS = (
    "none",
    "wrong_secret",
    "other_directory",
    "api_key_env",
    "scim_secret",
    "disabled_admin_token",
    "token_other_directory",
    "token_expired",
)


def test_authorization_matrix(world: World) -> None:
    runner = Runner()
    by_surface: dict[str, dict[bytes, list[str]]] = {}
    other_directory = f"/api/scim/v2.0/{world.b.id}"
    for kind, target in all_routes(world):
        path, query = split(target)
        if path.endswith("_login"):
            continue  # the login route takes the root token, not an admin credential: covered below
        for reason, header in wrong_credentials(world, kind).items():
            # A read and a write per route: the credential check comes before the method's own work.
            for method in ("GET", "PATCH") if reason in WRITE_REASONS else ("GET",):
                headers = {} if header is None else {"Authorization": header}
                ct = (SCIM_CT if kind == "scim" else JSON_CT) if method in ("POST", "PATCH", "PUT") else None
                body = b"{}" if ct else b""
                status, headers_out, out = runner.run(Case(method, path, query, body, headers, ct), expect=(401,))
                if status == 401:
                    key = answer_key(headers_out, out)
                    by_surface.setdefault(kind, {}).setdefault(key, []).append(f"{reason} {method} {path}")
    # Directory A's secret on directory B's routes: refused, the same 401 as any other wrong secret.
    for tail in ("/Users", f"/Users/{world.user_b}", f"/Users/{world.user_a}", "/Groups", "/Schemas", "/Users/.search"):
        for method in ("GET", "DELETE", "PATCH"):
            ct = SCIM_CT if method == "PATCH" else None
            status, headers_out, out = runner.run(
                Case(
                    method,
                    other_directory + tail,
                    "",
                    b"{}" if ct else b"",
                    {"Authorization": f"Bearer {world.a.scim_secret}"},
                    ct,
                ),
                expect=(401,),
            )
            if status == 401:
                key = answer_key(headers_out, out)
                by_surface.setdefault("scim", {}).setdefault(key, []).append(f"A's secret {method} {tail} of B")
    # The login route: a wrong root token is the admin surface's 401.
    for header in (None, "", "token=wrong", f"Bearer {ROOT}", world.admin_header, f"token={ROOT[:-1]}", "token=\x00"):
        headers = {} if header is None else {"Authorization": header}
        body = json.dumps({"claims": {"upstreamToken": "u", "email": "ops@example.com"}}).encode()
        status, headers_out, out = runner.run(
            Case("POST", "/auditlog/admin/v1/user/_login", "", body, headers, JSON_CT), expect=(401,)
        )
        if status == 401:
            key = answer_key(headers_out, out)
            by_surface.setdefault("login", {}).setdefault(key, []).append(f"login {header!r:.30}")
    for kind, answers in by_surface.items():
        if len(answers) > 1:
            shown = "\n".join(f"  {key[:200]!r}: {len(v)} e.g. {v[0]}" for key, v in answers.items())
            runner.failures.append(f"{kind}: {len(answers)} different 401 answers:\n{shown}")
    # A's credentials never show B's rows: REST reads scoped to acme, SCIM reads of A's directory.
    status, _, out = runner.run(
        rest_case(world, "GET", "/api/v1/directory-sync/users", query="tenant=acme&product=crm")
    )
    assert status == 200 and world.user_b.encode() not in out and b"@b.example" not in out
    status, _, out = runner.run(scim_case(world, "GET", "/Users", query="count=1000"))
    assert status == 200 and world.user_b.encode() not in out and b"@b.example" not in out
    status, _, out = runner.run(scim_case(world, "GET", "/Groups", query="count=1000&attributes=members"))
    assert status == 200 and world.group_b.encode() not in out and world.user_b.encode() not in out
    runner.check()
