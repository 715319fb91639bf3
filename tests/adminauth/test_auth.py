"""Admin API authentication: the `id= token= admin_token=` header and the Bearer JWT (contract §6)."""

from __future__ import annotations

import base64
import json
import time

import bcrypt
import jwt
import pytest
from django.test import Client

from adminauth.models import AdminToken, AdminUser
from tests.adminauth.conftest import ROOT, AdminSession

pytestmark = pytest.mark.django_db

URL = "/auditlog/admin/v1/directories"


def _get(header: str | None) -> object:
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    return Client().get(URL, **extra)


def _assert_401(response) -> None:  # noqa: ANN001
    assert response.status_code == 401, response.content
    body = response.json()
    assert body["data"] is None
    assert body["error"]["code"] == 401
    assert body["error"]["message"]


def test_token_header_authenticates(admin_session: AdminSession) -> None:
    response = _get(admin_session.token_header)
    assert response.status_code == 200
    assert response.json() == {"data": [], "error": None}


def test_parts_in_any_order_with_extra_spaces(admin_session: AdminSession) -> None:
    t = admin_session.body["adminToken"]
    header = f"  admin_token={ROOT}    token={t['token']}\tid={t['id']}  "
    assert _get(header).status_code == 200
    assert _get(f"token={t['token']}, admin_token={ROOT}, id={t['id']}").status_code == 200


def test_bearer_jwt_authenticates(admin_session: AdminSession) -> None:
    assert _get(admin_session.bearer_header).status_code == 200
    assert _get("bearer " + admin_session.body["token"]).status_code == 200


def _headers(s: AdminSession) -> dict[str, str]:
    t = s.body["adminToken"]
    return {"id": t["id"], "token": t["token"], "admin_token": ROOT}


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: f"id={p['id']} token= admin_token={p['admin_token']}",  # empty token
        lambda p: f"id= token={p['token']} admin_token={p['admin_token']}",  # empty id
        lambda p: f"id={p['id']} token={p['token']} admin_token=",  # empty root
        lambda p: f"id={p['id']} token={p['token']}",  # missing admin_token
        lambda p: f"token={p['token']} admin_token={p['admin_token']}",  # missing id
        lambda p: f"id={p['id']} admin_token={p['admin_token']}",  # missing token
        lambda p: f"id={p['id']} token={p['token']} admin_token={p['admin_token']} id={p['id']}",  # repeated
        lambda p: f"id={p['id']} token={p['token']} admin_token={p['admin_token']} extra=1",  # unknown part
        lambda p: f"id={p['id']} token={p['token']} admin_token={p['admin_token']} junk",  # bare word
        lambda p: f"id={p['id']} token={p['token']}x admin_token={p['admin_token']}",  # wrong token
        lambda p: f"id={p['id']} token={p['token']} admin_token={p['admin_token']}x",  # wrong root
        lambda p: f"id=not-a-uuid token={p['token']} admin_token={p['admin_token']}",  # garbage id
        lambda p: f"id=00000000-0000-0000-0000-000000000000 token={p['token']} admin_token={p['admin_token']}",
        lambda p: f"id={p['id']} token={'x' * 200} admin_token={p['admin_token']}",  # over bcrypt's 72 bytes
        lambda p: f"id={p['id']} token=ünïcode admin_token={p['admin_token']}",
        lambda p: "garbage",
        lambda p: "=",
        lambda p: "   ",
        lambda p: "Bearer",
        lambda p: "Bearer ",
        lambda p: "Bearer a b",
        lambda p: "Bearer not.a.jwt",
        lambda p: "Basic dXNlcjpwYXNz",
        lambda p: f"Bearer {p['token']}",  # the admin token secret is not a JWT
        lambda p: f"Bearer {p['admin_token']}",
    ],
)
def test_malformed_or_wrong_headers_are_401(admin_session: AdminSession, mutate) -> None:  # noqa: ANN001
    _assert_401(_get(mutate(_headers(admin_session))))


def test_missing_header_is_401_with_www_authenticate(db) -> None:  # noqa: ANN001
    response = _get(None)
    _assert_401(response)
    assert "Bearer" in response["WWW-Authenticate"]


def test_disabled_token_is_refused_and_its_jwt_too(admin_session: AdminSession) -> None:
    AdminToken.objects.update(disabled=True)
    _assert_401(_get(admin_session.token_header))
    _assert_401(_get(admin_session.bearer_header))


def test_disabled_admin_is_refused(admin_session: AdminSession) -> None:
    AdminUser.objects.update(is_active=False)
    _assert_401(_get(admin_session.token_header))
    _assert_401(_get(admin_session.bearer_header))


def test_token_header_needs_the_root_token_configured(admin_session: AdminSession, settings) -> None:  # noqa: ANN001
    settings.ADMIN_ROOT_TOKEN = None
    _assert_401(_get(admin_session.token_header))


def test_a_changed_stored_hash_is_not_served_from_the_verification_memo(admin_session: AdminSession) -> None:
    assert _get(admin_session.token_header).status_code == 200  # verified once, memoised
    AdminToken.objects.update(token_bcrypt=bcrypt.hashpw(b"another", bcrypt.gensalt(4)).decode())
    _assert_401(_get(admin_session.token_header))


def _jwt(claims: dict, key: str, alg: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=alg)


def _claims(s: AdminSession, **over) -> dict:  # noqa: ANN003
    now = int(time.time())
    base = {"userId": s.user_id, "iat": now, "exp": now + 600}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def test_expired_jwt_is_401(admin_session: AdminSession, settings) -> None:  # noqa: ANN001
    token = _jwt(
        _claims(admin_session, iat=int(time.time()) - 7200, exp=int(time.time()) - 10), settings.ADMIN_JWT_SECRET
    )
    response = _get(f"Bearer {token}")
    _assert_401(response)
    # The same answer as any other refused credential: a distinct "expired" would confirm that the
    # token's signature is genuine to whoever holds a copy of it.
    assert response.content == _get("Bearer not.a.jwt").content


def test_jwt_without_exp_is_401(admin_session: AdminSession, settings) -> None:  # noqa: ANN001
    _assert_401(_get("Bearer " + _jwt(_claims(admin_session, exp=None), settings.ADMIN_JWT_SECRET)))


def test_jwt_without_user_id_is_401(admin_session: AdminSession, settings) -> None:  # noqa: ANN001
    _assert_401(_get("Bearer " + _jwt(_claims(admin_session, userId=None), settings.ADMIN_JWT_SECRET)))


def test_jwt_with_garbage_user_id_is_401(admin_session: AdminSession, settings) -> None:  # noqa: ANN001
    for bad in ("nope", 12, "00000000-0000-0000-0000-000000000000"):
        _assert_401(_get("Bearer " + _jwt(_claims(admin_session, userId=bad), settings.ADMIN_JWT_SECRET)))


def test_jwt_signed_with_a_foreign_key_is_401(admin_session: AdminSession) -> None:
    _assert_401(_get("Bearer " + _jwt(_claims(admin_session), "some-other-key-with-plenty-of-length-000")))


def test_jwt_with_alg_none_is_401(admin_session: AdminSession) -> None:
    def b64(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    unsigned = f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(_claims(admin_session))}."
    _assert_401(_get(f"Bearer {unsigned}"))


def test_jwt_with_hs512_is_401(admin_session: AdminSession, settings) -> None:  # noqa: ANN001
    _assert_401(_get("Bearer " + _jwt(_claims(admin_session), settings.ADMIN_JWT_SECRET, alg="HS512")))


def test_jwt_with_token_of_another_admin_is_401(admin_session: AdminSession, root, settings) -> None:  # noqa: ANN001
    from tests.adminauth.conftest import login

    other = login("other@example.com").json()
    forged = _claims(admin_session, tokenId=other["adminToken"]["id"])
    _assert_401(_get("Bearer " + _jwt(forged, settings.ADMIN_JWT_SECRET)))


def test_repeated_bad_admin_tokens_are_throttled(admin_session: AdminSession, settings, monkeypatch) -> None:  # noqa: ANN001
    settings.ADMIN_LOGIN_MAX_FAILURES = 3
    t = admin_session.body["adminToken"]
    for _ in range(3):
        _assert_401(_get(f"id={t['id']} token=wrong admin_token={ROOT}"))
    monkeypatch.setattr(bcrypt, "checkpw", lambda *a: pytest.fail("bcrypt ran while throttled"))
    response = _get(admin_session.token_header)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == 429
    assert "Retry-After" in response
    # A JWT involves no guessable secret and no bcrypt: it keeps working.
    assert _get(admin_session.bearer_header).status_code == 200
