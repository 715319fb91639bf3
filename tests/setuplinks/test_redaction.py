"""A setup link's token never reaches a log: the application's lines, Django's, and the web server's access
log (which reads the request's environ after the answer)."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest
from django.test import Client

from config.wsgi import application  # imported first: its django.setup() configures logging anew
from directories.models import Directory
from setuplinks.redaction import SetupTokenMask, token_mask
from tests.setuplinks.conftest import make_link

pytestmark = pytest.mark.django_db


def test_token_mask_replaces_the_token_segment_only() -> None:
    assert token_mask("GET /setup/abcDEF_-123/secret?x=1 HTTP/1.1") == "GET /setup/***/secret?x=1 HTTP/1.1"
    assert token_mask("https://roster.example.com/setup/tok") == "https://roster.example.com/setup/***"
    assert token_mask("/portal/setup/x and /api/v1/directory-sync") == "/portal/setup/*** and /api/v1/directory-sync"
    assert token_mask("nothing here") == "nothing here"


def test_the_log_filter_masks_a_message_and_its_arguments() -> None:
    record = logging.LogRecord(
        "django.security.csrf", logging.WARNING, "", 0, "Forbidden (%s): %s", ("x", "/setup/tok/secret"), None
    )
    assert SetupTokenMask().filter(record) is True
    assert record.getMessage() == "Forbidden (x): /setup/***/secret"
    plain = logging.LogRecord("roster", logging.INFO, "", 0, "count %d", (3,), None)
    SetupTokenMask().filter(plain)
    assert plain.getMessage() == "count 3" and plain.args == (3,)


def _wsgi(path: str, **environ: str) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "RAW_URI": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": io.StringIO(),
        **environ,
    }
    body = application(env, lambda status, headers, exc_info=None: None)
    b"".join(body)
    getattr(body, "close", lambda: None)()
    return env


def test_no_log_line_carries_a_token(directory_a: Directory, console_log: Any) -> None:
    log = console_log("plain")
    link, token = make_link(directory_a)
    browser = Client(enforce_csrf_checks=True)
    assert browser.get(f"/setup/{token}").status_code == 200
    assert browser.post(f"/setup/{token}/secret").status_code == 403  # Django logs the refused path
    assert Client().get(f"/setup/{token}x").status_code == 404  # the 4xx line
    assert Client().get(f"/setup/{token}/nope").status_code == 404
    assert token not in log.text
    assert "/setup/***/secret" in log.text and "setup/<str:token>" in log.text


def test_a_server_error_on_a_setup_page_logs_no_token(
    directory_a: Directory, console_log: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = console_log("json")
    _link, token = make_link(directory_a)

    def broken(**_: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("setuplinks.views.setup_status", broken)
    response = Client(raise_request_exception=False).get(f"/setup/{token}")
    assert response.status_code == 500
    assert response["Cache-Control"] == "no-store" and not response.has_header("X-Frame-Options")
    assert "boom" in log.text and token not in log.text
    assert any("/setup/***" in line.get("message", "") for line in log.objects())
