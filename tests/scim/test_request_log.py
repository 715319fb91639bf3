"""The SCIM request log (contract §4.1): what is kept of a request, when, and that keeping it never
fails or changes the request."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import orjson
import pytest
from django.db import OperationalError
from django.test import Client

from directories.activity import recorder
from directories.models import Directory, DirectoryUser, ScimLogEntry
from directories.services import directory_update
from scim.api import scim_request
from tests.actors import TEST_ACTOR
from tests.scim.conftest import PATCH_URN, SCIM_CT, Scim, user_body, wsgi_run

pytestmark = pytest.mark.django_db

SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
PASSWORD = "hunter2-Very-Secret"


def entries(directory: Directory) -> list[ScimLogEntry]:
    """The directory's log, once this process's recorder has written what it gathered (its background
    thread's work, every few seconds in production)."""
    recorder.flush()
    return list(ScimLogEntry.objects.filter(directory=directory).order_by("at", "id"))


def stored_text(entry: ScimLogEntry) -> str:
    """Every text column of an entry, for looking for what must not be there."""
    return " ".join(str(getattr(entry, f.attname)) for f in ScimLogEntry._meta.concrete_fields)


def test_a_failed_request_is_kept_with_what_was_asked_and_answered(scim_a: Scim) -> None:
    scim_a.client.defaults.update(HTTP_USER_AGENT="Okta SCIM Client 1.0", HTTP_X_REQUEST_ID="okta-req-7")
    status, body = scim_a.get("/Users/6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11?attributes=userName")
    assert status == 404
    [entry] = entries(scim_a.directory)
    assert (entry.method, entry.path, entry.query) == (
        "GET",
        "/Users/6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11",
        "attributes=userName",
    )
    assert entry.status == 404 and entry.scim_type == "" and entry.detail == body["detail"]
    assert entry.request_id == "okta-req-7" == scim_a.last["X-Request-Id"]
    assert entry.user_agent == "Okta SCIM Client 1.0" and entry.client_ip == "127.0.0.1"
    assert orjson.loads(entry.response_body) == body and entry.latency_ms >= 0
    assert entry.request_body == "" and not entry.request_truncated and not entry.response_truncated


def test_successes_are_kept_only_while_log_scim_requests_is_on(scim_a: Scim) -> None:
    assert scim_a.post("/Users", user_body("ann@x.io"))[0] == 201
    assert scim_a.get("/Users")[0] == 200
    assert entries(scim_a.directory) == []
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"log_scim_requests": True})
    status, created = scim_a.post("/Users", user_body("bob@x.io"))
    assert status == 201
    [entry] = entries(scim_a.directory)
    assert (entry.method, entry.path, entry.status) == ("POST", "/Users", 201)
    assert orjson.loads(entry.request_body)["userName"] == "bob@x.io"
    assert orjson.loads(entry.response_body)["id"] == created["id"]


def test_a_401_naming_an_existing_directory_is_kept_and_answers_the_same_bytes(
    directory_a: Directory, directory_b: Directory
) -> None:
    wrong = Client(HTTP_AUTHORIZATION="Bearer not-the-secret")
    known = wrong.get(f"/api/scim/v2.0/{directory_a.id}/Groups")
    unknown = wrong.get(f"/api/scim/v2.0/{uuid.uuid4()}/Groups")
    not_an_id = wrong.get("/api/scim/v2.0/not-a-directory/Groups")
    other = Client(HTTP_AUTHORIZATION=f"Bearer {directory_b.scim_secret}").get(
        f"/api/scim/v2.0/{directory_a.id}/Groups"
    )
    assert known.status_code == unknown.status_code == not_an_id.status_code == other.status_code == 401
    assert known.content == unknown.content == not_an_id.content == other.content
    assert [(e.status, e.path) for e in entries(directory_a)] == [(401, "/Groups"), (401, "/Groups")]
    assert entries(directory_b) == [] and ScimLogEntry.objects.count() == 2


def test_no_header_and_no_secret_is_ever_stored(scim_a: Scim) -> None:
    secret = scim_a.directory.scim_secret
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"log_scim_requests": True})
    scim_a.client.defaults["HTTP_X_CUSTOM"] = "custom-header-value"
    scim_a.post("/Users", user_body("ann@x.io"))
    Client(HTTP_AUTHORIZATION=f"Bearer {secret}x").get(f"{scim_a.base}/Users")
    stored = " ".join(stored_text(e) for e in entries(scim_a.directory))
    assert len(entries(scim_a.directory)) == 2
    assert secret not in stored and "custom-header-value" not in stored


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/Users", user_body("ann@x.io", password=PASSWORD)),
        ("POST", "/Users", user_body("ann@x.io", PASSWORD=PASSWORD)),
        ("POST", "/Users", user_body("ann@x.io", **{"urn:ietf:params:scim:schemas:core:2.0:User:password": PASSWORD})),
        (
            "PATCH",
            "/Users/{user}",
            {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "password", "value": PASSWORD}]},
        ),
        (
            "PATCH",
            "/Users/{user}",
            {"schemas": [PATCH_URN], "Operations": [{"op": "Replace", "path": "PassWord", "value": PASSWORD}]},
        ),
        (
            "PATCH",
            "/Users/{user}",
            {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "value": {"password": PASSWORD}}]},
        ),
        ("POST", "/Users/.search", {"schemas": [SEARCH_URN], "filter": f'password eq "{PASSWORD}"'}),
        ("PUT", "/Users/{user}", user_body("ann@x.io", password={"nested": PASSWORD})),
    ],
)
def test_password_values_are_masked_wherever_they_are(scim_a: Scim, method: str, path: str, body: Any) -> None:
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"log_scim_requests": True})
    _, user = scim_a.post("/Users", user_body("ann@x.io"))
    scim_a.call(method, path.format(user=user["id"]), body)
    logged = entries(scim_a.directory)[-1]
    assert logged.method == method
    assert PASSWORD not in stored_text(logged)
    assert "***" in logged.request_body


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (f'{{"userName": "ann@x.io", "password": "{PASSWORD}", "name": '.encode(), SCIM_CT),  # cut JSON
        (f'{{"Operations": [{{"path": "password", "value": "{PASSWORD}"}}'.encode(), SCIM_CT),
        (f"userName=ann&password={PASSWORD}".encode(), "application/x-www-form-urlencoded"),  # 415
        (f'{{"filter": "password eq \\"{PASSWORD}\\"" '.encode(), SCIM_CT),
    ],
)
def test_bodies_that_are_not_json_are_masked_too(scim_a: Scim, raw: bytes, content_type: str) -> None:
    status, _ = scim_a.call("POST", "/Users", raw, content_type=content_type)
    assert status in (400, 415)
    [entry] = entries(scim_a.directory)
    assert PASSWORD not in stored_text(entry) and "***" in entry.request_body


def test_a_password_in_the_query_is_masked(scim_a: Scim) -> None:
    status, _ = scim_a.get(f"/Users?filter=password%20eq%20%22{PASSWORD}%22&password={PASSWORD}")
    assert status == 403  # RFC 7644 §7.5.2: a filter on password is refused
    [entry] = entries(scim_a.directory)
    assert PASSWORD not in stored_text(entry)
    assert entry.query == 'filter=password eq "***"&password=***'


def test_bodies_are_capped_and_say_so(scim_a: Scim) -> None:
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"log_scim_requests": True})
    big = user_body("big@x.io", title="é" * 20_000)  # two bytes each: the cut falls inside one
    assert scim_a.post("/Users", big)[0] == 201
    for i in range(40):
        scim_a.post("/Users", user_body(f"user{i}@x.io", title="t" * 100))
    assert scim_a.get("/Users?count=40")[0] == 200
    create, *_, listing = entries(scim_a.directory)
    assert create.request_truncated and len(create.request_body.encode()) <= 16 * 1024
    assert create.request_body.startswith("{") and create.request_body.endswith("é")
    assert listing.response_truncated and len(listing.response_body.encode()) <= 4 * 1024
    assert listing.path == "/Users" and not listing.request_truncated


def test_binary_and_broken_bodies_are_kept_as_text(scim_a: Scim) -> None:
    raw = b'{"userName": "\x00\xff\xfe' + bytes(range(256)) * 100
    status, body = scim_a.call("POST", "/Users", raw)
    assert status == 400
    [entry] = entries(scim_a.directory)
    assert entry.request_truncated and "\x00" not in entry.request_body and "\ufffd" in entry.request_body
    assert entry.request_body.startswith('{"userName": "') and entry.scim_type == body["scimType"]


def test_requests_refused_before_their_secret_is_checked_are_kept_for_an_existing_directory(
    scim_a: Scim, directory_b: Directory
) -> None:
    assert scim_a.call("POST", "/Users", b"<xml/>", content_type="text/xml")[0] == 415
    huge = Client(HTTP_AUTHORIZATION="Bearer x").post(
        f"/api/scim/v2.0/{uuid.uuid4()}/Users", b"{}", content_type=SCIM_CT, CONTENT_LENGTH=str(2 * 1024 * 1024)
    )
    assert huge.status_code == 413
    [entry] = entries(scim_a.directory)
    assert (entry.status, entry.request_body) == (415, "<xml/>")
    assert ScimLogEntry.objects.count() == 1


@pytest.mark.django_db(transaction=True)  # the WSGI entry opens and closes connections as a server's request does
def test_the_wsgi_entry_keeps_the_same_entry_as_django_s(directory_a: Directory) -> None:
    from config.wsgi import application

    path = f"/api/scim/v2.0/{directory_a.id}/Users/missing"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}", "HTTP_X_REQUEST_ID": "via-wsgi"}
    status, headers, _ = wsgi_run(application.scim, path, **auth)
    assert status.startswith("404") and ("X-Request-Id", "via-wsgi") in headers
    Client(HTTP_X_REQUEST_ID="via-django", **{"HTTP_AUTHORIZATION": auth["HTTP_AUTHORIZATION"]}).get(path)
    first, second = entries(directory_a)
    assert (first.request_id, second.request_id) == ("via-wsgi", "via-django")
    for field in ("method", "path", "query", "status", "detail", "response_body"):
        assert getattr(first, field) == getattr(second, field), field


def test_a_failing_log_insert_is_logged_and_the_request_answers_as_usual(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from scim.http.activity import Exchange

    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"log_scim_requests": True})
    # A real database error: the row breaks the column's CHECK (latency_ms >= 0), so the database refuses it.
    entry = Exchange.log_entry
    monkeypatch.setattr(Exchange, "log_entry", lambda self: {**entry(self), "latency_ms": -1})
    with caplog.at_level(logging.WARNING, logger="roster.scim"):
        status, created = scim_a.post("/Users", user_body("ann@x.io", password=PASSWORD))
        missing, _ = scim_a.get("/Users/nope")
        assert (status, missing) == (201, 404)
        assert DirectoryUser.objects.filter(pk=created["id"], directory=scim_a.directory).exists()
        assert entries(scim_a.directory) == []  # the flush: both refused, one line for them
    lines = [r.getMessage() for r in caplog.records if "SCIM request log" in r.getMessage()]
    assert lines == ["SCIM request log: 2 entries not written (IntegrityError)"]
    assert PASSWORD not in caplog.text and scim_a.directory.scim_secret not in caplog.text
    monkeypatch.undo()
    assert scim_a.get("/Users/nope")[0] == 404 and len(entries(scim_a.directory)) == 1  # the next one is kept


def test_entries_the_database_could_not_take_yet_are_kept_for_the_next_flush(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from directories.activity import recorder as recorder_module

    def unreachable(**kwargs: Any) -> int:
        raise OperationalError("connection refused")

    scim_a.get("/Users/nope")
    monkeypatch.setattr(recorder_module, "scim_log_write_many", unreachable)
    with caplog.at_level(logging.DEBUG, logger="roster.scim"):
        recorder.flush()
    # Not a warning: each request that meets an unreachable database already says so (its 503's line).
    [kept] = [r for r in caplog.records if "SCIM request log" in r.getMessage()]
    assert kept.levelno == logging.DEBUG
    assert kept.getMessage() == (
        "SCIM request log: 1 entries not written yet (OperationalError); kept for the next flush"
    )
    monkeypatch.undo()
    scim_a.get("/Groups/nope")
    assert [e.path for e in entries(scim_a.directory)] == ["/Users/nope", "/Groups/nope"]


def test_the_queue_of_entries_is_bounded(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from directories.activity import recorder as recorder_module

    monkeypatch.setattr(recorder_module, "LOG_QUEUE_BYTES", 1500)  # room for two small entries
    for _ in range(5):
        scim_a.get("/Users/nope")
    with caplog.at_level(logging.WARNING, logger="roster.scim"):
        assert len(entries(scim_a.directory)) == 2
    assert "SCIM request log: 3 entries dropped" in caplog.text


def test_nothing_is_kept_for_an_answer_the_database_could_not_give(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from scim.http import views

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("the database went away")

    monkeypatch.setattr(views, "process", down)
    with caplog.at_level(logging.WARNING):
        assert scim_a.get("/Users")[0] == 503
        monkeypatch.undo()
        assert entries(scim_a.directory) == []
    assert len([r for r in caplog.records if r.name == "roster.scim"]) == 1  # the 503's own line only


def test_the_embedding_api_keeps_no_entry(directory_a: Directory) -> None:
    result = scim_request(
        {"method": "GET", "directoryId": str(directory_a.id), "apiSecret": "wrong", "resourceType": "users"}
    )
    assert result["status"] == 401
    assert entries(directory_a) == []
