"""POST /auditlog/admin/v1/user/_login: the bare success object and enveloped errors."""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime

import bcrypt
import jwt
import pytest
from django.test import Client

from adminauth.models import AdminToken, AdminUser, LoginFailure
from audit.models import AuditEntry
from tests.adminauth.conftest import LOGIN, ROOT, login

pytestmark = pytest.mark.django_db

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def test_login_answers_the_spec_object_field_by_field(root, settings) -> None:  # noqa: ANN001
    before = int(time.time())
    response = login("Ops@Example.com")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"user", "token", "adminToken"}

    user = AdminUser.objects.get()
    assert body["user"] == {"email": "Ops@Example.com", "id": str(user.id), "timezone": "UTC"}

    claims = jwt.decode(body["token"], settings.ADMIN_JWT_SECRET, algorithms=["HS256"])
    assert jwt.get_unverified_header(body["token"])["alg"] == "HS256"
    assert claims["userId"] == str(user.id)
    assert before <= claims["iat"] <= int(time.time())
    assert claims["exp"] - claims["iat"] == settings.ADMIN_JWT_LIFETIME_SECONDS

    admin_token = body["adminToken"]
    assert set(admin_token) == {"id", "userId", "tokenBcrypt", "token", "disabled", "createdAt"}
    row = AdminToken.objects.get()
    assert admin_token["id"] == str(row.id)
    assert admin_token["userId"] == str(user.id)
    assert admin_token["disabled"] is False
    assert bcrypt.checkpw(admin_token["token"].encode(), admin_token["tokenBcrypt"].encode())
    assert admin_token["tokenBcrypt"] == row.token_bcrypt
    assert len(admin_token["token"]) >= 43  # 32 random bytes, url-safe
    assert ISO_UTC.match(admin_token["createdAt"])
    created = datetime.fromisoformat(admin_token["createdAt"].replace("Z", "+00:00"))
    assert created.tzinfo is not None and created.utcoffset().total_seconds() == 0
    assert abs((created - datetime.now(UTC)).total_seconds()) < 60
    # The secret itself is not stored, only its hash.
    assert admin_token["token"] not in row.token_bcrypt


def test_bcrypt_cost_comes_from_settings(root, settings) -> None:  # noqa: ANN001
    settings.ADMIN_BCRYPT_COST = 5
    body = login().json()
    assert body["adminToken"]["tokenBcrypt"].startswith("$2b$05$")


def test_second_login_reuses_the_admin_case_insensitively_with_a_new_token(root) -> None:  # noqa: ANN001
    first = login("ops@example.com").json()
    second = login("OPS@EXAMPLE.COM").json()
    assert first["user"]["id"] == second["user"]["id"]
    assert first["adminToken"]["id"] != second["adminToken"]["id"]
    assert AdminUser.objects.count() == 1
    assert AdminToken.objects.count() == 2


def test_login_is_audited_once_without_secrets(root) -> None:  # noqa: ANN001
    body = login().json()
    entry = AuditEntry.objects.get()
    assert entry.action == "admin.login"
    assert str(entry.actor_id) == body["user"]["id"]
    assert entry.client_ip == "127.0.0.1"
    assert entry.details == {"via": "admin-api", "actor": "ops@example.com", "created": True}
    serialized = str(entry.__dict__)
    for secret in (body["token"], body["adminToken"]["token"], body["adminToken"]["tokenBcrypt"], ROOT):
        assert secret not in serialized


def test_login_is_404_when_no_root_token_is_configured(settings, db) -> None:  # noqa: ANN001
    settings.ADMIN_ROOT_TOKEN = None
    response = login()
    assert response.status_code == 404
    assert response.json() == {"data": None, "error": {"message": "Not found.", "code": 404}}
    assert AdminUser.objects.count() == 0


@pytest.mark.parametrize(
    "header",
    [None, "", "token=", "token=wrong", f"token={ROOT}x", f"Bearer {ROOT}", ROOT, f"admin_token={ROOT}", "token"],
)
def test_login_refuses_a_missing_or_wrong_root_token(root, header) -> None:  # noqa: ANN001
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = Client().post(LOGIN, {"claims": {"email": "ops@example.com"}}, content_type="application/json", **extra)
    assert response.status_code == 401
    body = response.json()
    assert body["data"] is None and body["error"]["code"] == 401
    assert AdminUser.objects.count() == 0 and AdminToken.objects.count() == 0


def test_login_accepts_spaces_around_the_root_token(root) -> None:  # noqa: ANN001
    response = Client().post(
        LOGIN,
        {"claims": {"email": "ops@example.com"}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"  token={ROOT}  ",
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"claims": None},
        {"claims": "ops@example.com"},
        {"claims": {}},
        {"claims": {"email": ""}},
        {"claims": {"email": "   "}},
        {"claims": {"email": 42}},
        {"claims": {"email": "not-an-email"}},
        {"claims": {"email": "a b@example.com"}},
        {"claims": {"email": "ops@example.com", "upstreamToken": 7}},
        [],
    ],
)
def test_login_with_bad_claims_is_400(root, body) -> None:  # noqa: ANN001
    response = Client().post(LOGIN, body, content_type="application/json", HTTP_AUTHORIZATION=f"token={ROOT}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == 400
    assert AdminUser.objects.count() == 0


def test_login_with_malformed_json_is_400(root) -> None:  # noqa: ANN001
    response = Client().post(LOGIN, "{nope", content_type="application/json", HTTP_AUTHORIZATION=f"token={ROOT}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == 400


@pytest.mark.parametrize(
    ("raw", "status", "fragment"),
    [
        (b'{"claims": {"email": "ops\\u0000@example.com"}}', 400, "NUL"),
        (b'{"claims": {"email": "ops@example.com", "upstreamToken": "\\udc00"}}', 400, "JSON"),
        (b'{"claims": {"email": "ops@example.com", "n": 9223372036854775808}}', 400, "64-bit"),
        (b'{"claims": {"email": "ops@example.com", "upstreamToken": "' + b"x" * 2_000_000 + b'"}}', 413, "too large"),
        # 300 "İ" fit the 320-character column, their lowercase form (600) does not: PostgreSQL refused it.
        (('{"claims": {"email": "' + "İ" * 300 + '@x.com"}}').encode(), 400, "email address"),
    ],
)
def test_login_bodies_that_cannot_be_stored_are_refused_and_create_no_admin(root, raw, status, fragment) -> None:  # noqa: ANN001
    response = Client().post(LOGIN, raw, content_type="application/json", HTTP_AUTHORIZATION=f"token={ROOT}")
    assert response.status_code == status, response.content
    assert response.json()["data"] is None and response.json()["error"]["code"] == status
    assert fragment in response.json()["error"]["message"]
    assert AdminUser.objects.count() == 0 and AdminToken.objects.count() == 0


def test_options_on_login_is_405_in_the_envelope_without_options_in_allow(root) -> None:  # noqa: ANN001
    response = Client().options(LOGIN)
    assert response.status_code == 405
    assert response.json()["error"]["code"] == 405
    assert "OPTIONS" not in response["Allow"] and "POST" in response["Allow"]


def test_get_on_login_is_405_in_the_envelope(root) -> None:  # noqa: ANN001
    response = Client().get(LOGIN, HTTP_AUTHORIZATION=f"token={ROOT}")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == 405


def test_a_disabled_admin_cannot_log_in(root) -> None:  # noqa: ANN001
    AdminUser.objects.create_user("gone@example.com")
    AdminUser.objects.filter(email_key="gone@example.com").update(is_active=False)
    response = login("gone@example.com")
    assert response.status_code == 403
    assert AdminToken.objects.count() == 0


class TestThrottle:
    def test_repeated_failures_are_throttled_before_any_bcrypt_work(self, root, settings, monkeypatch) -> None:  # noqa: ANN001
        settings.ADMIN_LOGIN_MAX_FAILURES = 3
        for _ in range(3):
            assert login(root_token="wrong").status_code == 401
        calls = []
        monkeypatch.setattr(bcrypt, "hashpw", lambda *a: calls.append(a) or b"")
        monkeypatch.setattr(bcrypt, "checkpw", lambda *a: calls.append(a) or False)
        # Even the right root token is refused now: a throttled client learns nothing from a guess.
        response = login()
        assert response.status_code == 429
        assert response.json()["error"]["code"] == 429
        assert int(response["Retry-After"]) > 0
        assert calls == []
        assert AdminUser.objects.count() == 0

    def test_throttle_is_per_client_address(self, root, settings) -> None:  # noqa: ANN001
        settings.ADMIN_LOGIN_MAX_FAILURES = 2
        for _ in range(2):
            login(root_token="wrong", REMOTE_ADDR="198.51.100.1")
        assert login(REMOTE_ADDR="198.51.100.1").status_code == 429
        assert login(REMOTE_ADDR="198.51.100.2").status_code == 200

    def test_failures_age_out_of_the_window(self, root, settings) -> None:  # noqa: ANN001
        settings.ADMIN_LOGIN_MAX_FAILURES = 2
        for _ in range(2):
            login(root_token="wrong")
        assert login().status_code == 429
        LoginFailure.objects.update(created_at=datetime(2000, 1, 1, tzinfo=UTC))
        assert login().status_code == 200

    def test_success_clears_earlier_failures(self, root, settings) -> None:  # noqa: ANN001
        settings.ADMIN_LOGIN_MAX_FAILURES = 3
        login(root_token="wrong")
        login(root_token="wrong")
        assert login().status_code == 200
        assert LoginFailure.objects.count() == 0

    def test_bad_claims_are_not_counted_as_failed_logins(self, root, settings) -> None:  # noqa: ANN001
        settings.ADMIN_LOGIN_MAX_FAILURES = 1
        Client().post(LOGIN, {"claims": {}}, content_type="application/json", HTTP_AUTHORIZATION=f"token={ROOT}")
        assert login().status_code == 200

    def test_forwarded_for_is_ignored_unless_a_proxy_is_trusted(self, root, settings) -> None:  # noqa: ANN001
        settings.ADMIN_LOGIN_MAX_FAILURES = 1
        login(root_token="wrong", HTTP_X_FORWARDED_FOR="192.0.2.1")
        # A client cannot dodge the throttle by inventing a new X-Forwarded-For each time.
        assert login(HTTP_X_FORWARDED_FOR="192.0.2.2").status_code == 429
        settings.TRUSTED_PROXY_COUNT = 1
        assert login(HTTP_X_FORWARDED_FOR="192.0.2.2").status_code == 200
        assert AuditEntry.objects.get().client_ip == "192.0.2.2"


def test_user_id_is_a_uuid(root) -> None:  # noqa: ANN001
    assert uuid.UUID(login().json()["user"]["id"])
