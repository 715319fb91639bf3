"""config.wsgi: SCIM requests run through settings.SCIM_MIDDLEWARE, everything else through the full chain.

These call the WSGI application gunicorn serves (Django's test Client builds its own handler with the
full chain, so the other tests never see the split). Transactional, because each request closes or
reuses the database connection the way a real one does.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from django.conf import settings

from config.wsgi import SurfaceApplication, application
from directories.models import Directory, DirectoryUser
from tests.scim.conftest import SCIM_CT, user_body

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
