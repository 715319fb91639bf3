"""Log lines of a request (contract §7.1): its id on every line, one line for every 4xx/5xx and every SCIM
write, JSON objects one per line with LOG_FORMAT=json, and never a secret."""

from __future__ import annotations

import logging
import re
from typing import Any

import orjson
import pytest
from django.test import Client

from config.wsgi import application  # imported first: its django.setup() configures logging anew
from core.requestid import scope_bound
from directories.models import Directory, DirectoryUser
from tests.scim.conftest import SCIM_CT, handler_failing, user_body, wsgi_run

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _scim(directory: Directory, method: str, path: str, body: Any = None, **headers: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
    kwargs: dict[str, Any] = dict(headers)
    if body is not None:
        kwargs.update(data=orjson.dumps(body), content_type=SCIM_CT)
    return getattr(client, method.lower())(f"/api/scim/v2.0/{directory.id}{path}", **kwargs)


def _request_lines(objects: list[dict], request_id: str) -> list[dict]:
    return [o for o in objects if o.get("request_id") == request_id]


def test_a_scim_write_leaves_one_json_line_with_its_request_and_directory_ids(
    directory_a: Directory, console_log: Any
) -> None:
    log = console_log("json")
    response = _scim(directory_a, "POST", "/Users", user_body("ann@example.com"), HTTP_X_REQUEST_ID="write-1")
    assert response.status_code == 201
    assert DirectoryUser.objects.filter(directory=directory_a, user_name="ann@example.com").exists()
    [line] = _request_lines(log.objects(), "write-1")
    assert set(line) >= {"time", "level", "logger", "message", "request_id", "directory_id"}
    assert TIME.fullmatch(line["time"]) and line["level"] == "INFO" and line["logger"] == "roster.requests"
    assert line["directory_id"] == str(directory_a.id)
    assert (line["method"], line["resource"], line["status"]) == ("POST", "users", 201)
    assert "ann@example.com" not in log.text  # the line names no attribute of the user


def test_a_successful_scim_read_leaves_no_line(directory_a: Directory, console_log: Any) -> None:
    log = console_log("json")
    assert _scim(directory_a, "GET", "/Users", HTTP_X_REQUEST_ID="read-1").status_code == 200
    assert _request_lines(log.objects(), "read-1") == []


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/api/v1/directory-sync?tenant=acme&product=crm", {}, 401),
        ("/api/v1/directory-sync/nope", {"HTTP_AUTHORIZATION": "Bearer test-env-api-key"}, 404),
        (
            "/api/v1/directory-sync?tenant=acme&product=crm&pageLimit=x",
            {"HTTP_AUTHORIZATION": "Bearer test-env-api-key"},
            400,
        ),
        ("/auditlog/admin/v1/directories", {}, 401),
        ("/portal/nothing-here", {}, 404),
        ("/metrics", {}, 404),
        ("/nowhere", {}, 404),
    ],
)
def test_every_4xx_leaves_one_line_carrying_its_request_id(
    db: Any, console_log: Any, path: str, headers: dict[str, str], status: int
) -> None:
    log = console_log("json")
    response = Client().get(path, HTTP_X_REQUEST_ID="four-xx", **headers)
    assert response.status_code == status
    lines = _request_lines(log.objects(), "four-xx")
    assert len(lines) >= 1 and any(str(status) in line["message"] for line in lines)
    assert "pageLimit" not in log.text  # the route pattern, never the query


@pytest.mark.parametrize("path", ["/Users", "/Users/7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f", "/Nothing"])
def test_every_scim_4xx_leaves_one_line(directory_a: Directory, console_log: Any, path: str) -> None:
    log = console_log("json")
    client = Client(HTTP_AUTHORIZATION="Bearer wrong" if path == "/Users" else f"Bearer {directory_a.scim_secret}")
    response = client.get(f"/api/scim/v2.0/{directory_a.id}{path}", HTTP_X_REQUEST_ID="scim-4xx")
    assert 400 <= response.status_code < 500
    [line] = _request_lines(log.objects(), "scim-4xx")
    assert line["status"] == response.status_code


def test_a_500_is_one_json_line_with_its_request_id_and_the_traceback_inside(
    api_client: Client, monkeypatch: pytest.MonkeyPatch, console_log: Any
) -> None:
    def explode(**kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("restapi.apis.directory_list", explode)
    api_client.raise_request_exception = False
    log = console_log("json")
    response = api_client.get("/api/v1/directory-sync?tenant=acme&product=crm", HTTP_X_REQUEST_ID="five-00")
    assert response.status_code == 500 and "five-00" in response.json()["error"]["message"]
    objects = log.objects()  # every line parses: the traceback stayed inside its object
    [line] = _request_lines(objects, "five-00")
    assert line["level"] == "ERROR" and "Traceback" in line["exc_info"] and "boom" in line["exc_info"]


def test_plain_text_is_the_default_and_its_lines_carry_the_request_id(directory_a: Directory, console_log: Any) -> None:
    from django.conf import settings

    assert settings.LOG_FORMAT == "plain"
    log = console_log("plain")
    assert (
        _scim(directory_a, "DELETE", "/Users/7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f", HTTP_X_REQUEST_ID="p-1").status_code
        == 404
    )
    [line] = [line for line in log.lines() if "request_id=p-1" in line]
    assert " INFO roster.requests SCIM DELETE users answered 404 " in line
    assert f"directory_id={directory_a.id}" in line


def test_a_background_job_names_its_directory_and_no_request(console_log: Any) -> None:
    log = console_log("json")
    with scope_bound(directory_id="7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f"):
        logging.getLogger("roster.webhooks").warning("a drain line")
    logging.getLogger("roster.webhooks").warning("outside")
    inside, outside = log.objects()[-2:]
    assert inside["directory_id"] == "7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f" and "request_id" not in inside
    assert "directory_id" not in outside and "request_id" not in outside


@pytest.mark.django_db(transaction=True)
def test_the_fast_scim_entry_logs_and_counts_each_request_once(directory_a: Directory, console_log: Any) -> None:
    log = console_log("json")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}", "HTTP_X_REQUEST_ID": "fast-1"}
    status, headers, _ = wsgi_run(
        application, f"/api/scim/v2.0/{directory_a.id}/Users", method="POST", body=orjson.dumps(user_body()), **auth
    )
    assert status == "201 Created" and ("X-Request-Id", "fast-1") in headers
    [line] = _request_lines(log.objects(), "fast-1")
    assert line["directory_id"] == str(directory_a.id)


def test_secrets_never_reach_a_json_log_line(
    directory_a: Directory, console_log: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The canaries of every kind of credential Roster handles, sent where they could leak."""
    settings.METRICS_TOKEN = "canary-metrics-token-0123456789"
    settings.ADMIN_ROOT_TOKEN = "canary-root-token-0123456789"
    log = console_log("json")
    password = "canary-password-0123456789"
    # A SCIM write with a password, a wrong secret, and a request that fails with a traceback.
    assert _scim(directory_a, "POST", "/Users", user_body("c@x.io", password=password)).status_code == 201
    Client(HTTP_AUTHORIZATION="Bearer canary-wrong-scim-secret").get(f"/api/scim/v2.0/{directory_a.id}/Users")
    handler_failing(monkeypatch, "users", "POST", RuntimeError("boom"))
    assert (
        _scim(directory_a, "POST", "/Users?filter=canary-query", user_body("d@x.io", password=password)).status_code
        == 500
    )
    monkeypatch.undo()
    settings.METRICS_TOKEN = "canary-metrics-token-0123456789"
    settings.ADMIN_ROOT_TOKEN = "canary-root-token-0123456789"
    # REST with a wrong API key, and a directory created with a webhook secret.
    Client(HTTP_AUTHORIZATION="Bearer canary-wrong-api-key").get("/api/v1/directory-sync?tenant=a&product=b")
    created = Client(HTTP_AUTHORIZATION="Bearer test-env-api-key").post(
        "/api/v1/directory-sync",
        {
            "tenant": "t",
            "product": "p",
            "webhook_url": "https://hooks.example.com/x",
            "webhook_secret": "canary-webhook-secret-0123",
        },
        content_type="application/json",
    )
    # Admin login with a wrong root token; /metrics with a wrong token and the right one.
    Client().post(
        "/auditlog/admin/v1/user/_login",
        {"claims": {"email": "ops@example.com"}},
        content_type="application/json",
        HTTP_AUTHORIZATION="token=canary-wrong-root-token",
    )
    Client(HTTP_AUTHORIZATION="Bearer canary-wrong-metrics-token").get("/metrics")
    assert Client(HTTP_AUTHORIZATION="Bearer canary-metrics-token-0123456789").get("/metrics").status_code == 200
    objects = log.objects()
    assert len(objects) >= 5
    text = log.text
    for canary in (
        password,
        directory_a.scim_secret,
        created.json()["data"]["scim"]["secret"],
        "canary-wrong-scim-secret",
        "canary-wrong-api-key",
        "test-env-api-key",
        "canary-webhook-secret-0123",
        "canary-wrong-root-token",
        "canary-root-token-0123456789",
        "canary-wrong-metrics-token",
        "canary-metrics-token-0123456789",
        "canary-query",
    ):
        assert canary not in text, canary
