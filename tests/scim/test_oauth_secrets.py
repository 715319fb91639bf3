"""Several OAuth client secrets per directory, each with an expiry (contract §4.3): added (shown once), listed
(never the value), revoked one by one (its tokens end at once, the others' keep working), at most 5
unexpired, the single-secret route revoking them all; on the REST API and the admin API, audited; and the
access token's lifetime, SCIM_OAUTH_TOKEN_SECONDS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from core.crypto import secret_digest
from core.timefmt import iso_utc
from directories.models import Directory
from directories.services import directory_scim_oauth_secret_add, directory_scim_oauth_secret_revoke
from scim import access_tokens
from tests.actors import TEST_ACTOR
from tests.scim.conftest import OAuth, oauth_on

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
REST = "/api/v1/directory-sync"
ADMIN = "/auditlog/admin/v1"


def scim_status(directory: Directory, credential: str) -> int:
    return Client(HTTP_AUTHORIZATION=f"Bearer {credential}").get(f"/api/scim/v2.0/{directory.id}/Users").status_code


def add(client: Client, directory: Directory, body: Any = None, base: str = REST) -> Any:
    raw = b"" if body is None else json.dumps(body).encode()
    path = f"{base}/directories/{directory.id}" if base == ADMIN else f"{base}/{directory.id}"
    return client.post(f"{path}/scim-oauth-secrets", raw, content_type="application/json")


def listed(client: Client, directory: Directory, base: str = REST) -> Any:
    path = f"{base}/directories/{directory.id}" if base == ADMIN else f"{base}/{directory.id}"
    return client.get(f"{path}/scim-oauth-secrets")


def revoke(client: Client, directory: Directory, secret_id: str, base: str = REST) -> Any:
    path = f"{base}/directories/{directory.id}" if base == ADMIN else f"{base}/{directory.id}"
    return client.delete(f"{path}/scim-oauth-secrets/{secret_id}")


def fresh(directory: Directory) -> Directory:
    return Directory.objects.get(pk=directory.pk)


def test_a_secret_is_added_shown_once_listed_without_its_value_and_gets_tokens(
    api_client: Client, directory_a: Directory
) -> None:
    response = add(api_client, directory_a, {"expires_in_days": 30})
    assert response.status_code == 201, response.content
    made = response.json()["data"]
    assert set(made) == {"id", "client_secret", "created_at", "expires_at"}
    created, expires = (datetime.fromisoformat(made[k]) for k in ("created_at", "expires_at"))
    assert expires - created == timedelta(days=30)
    secret = made["client_secret"]
    assert fresh(directory_a).scim_oauth_secrets[0]["hash"] == secret_digest(secret)
    assert api_client.get(f"{REST}/{directory_a.id}").json()["data"]["scim"]["oauth"]["enabled"] is True
    # Listed without its value; last_used_at is set once it obtains a token.
    [entry] = listed(api_client, directory_a).json()["data"]
    assert entry == {k: made[k] for k in ("id", "created_at", "expires_at")} | {
        "last_used_at": None,
        "hint": secret[-4:],
    }
    assert secret not in listed(api_client, directory_a).content.decode()
    token = OAuth(fresh(directory_a), secret).token()
    assert scim_status(directory_a, token) == 200
    [entry] = listed(api_client, directory_a).json()["data"]
    assert entry["last_used_at"] is not None


def test_revoking_one_secret_ends_its_tokens_at_once_and_the_others_keep_working(
    api_client: Client, directory_a: Directory
) -> None:
    one = add(api_client, directory_a).json()["data"]
    two = add(api_client, directory_a).json()["data"]
    token_one = OAuth(fresh(directory_a), one["client_secret"]).token()
    token_two = OAuth(fresh(directory_a), two["client_secret"]).token()
    assert scim_status(directory_a, token_one) == scim_status(directory_a, token_two) == 200
    assert [e["id"] for e in listed(api_client, directory_a).json()["data"]] == [two["id"], one["id"]]

    response = revoke(api_client, directory_a, one["id"])
    assert response.status_code == 204 and not response.content
    assert scim_status(directory_a, token_one) == 401
    assert scim_status(directory_a, token_two) == 200
    status, _headers, body = OAuth(fresh(directory_a), one["client_secret"]).post(
        authorization=OAuth(directory_a, one["client_secret"]).basic()
    )
    assert status == 401 and body["error"] == "invalid_client"
    assert [e["id"] for e in listed(api_client, directory_a).json()["data"]] == [two["id"]]
    # Unknown, already revoked, not an id: 404.
    for unknown in (one["id"], "not-an-id", "00000000-0000-0000-0000-000000000000"):
        gone = revoke(api_client, directory_a, unknown)
        assert gone.status_code == 404 and gone.json()["data"] is None


def test_at_most_five_unexpired_and_an_expired_one_neither_counts_nor_gets_a_token(
    api_client: Client, directory_a: Directory
) -> None:
    made = [add(api_client, directory_a).json()["data"] for _ in range(5)]
    sixth = add(api_client, directory_a)
    assert sixth.status_code == 409 and "5 unexpired" in sixth.json()["error"]["message"]
    assert len(fresh(directory_a).scim_oauth_secrets) == 5
    # The oldest expires: it no longer counts, and it gets invalid_client.
    row = fresh(directory_a)
    row.scim_oauth_secrets[-1]["expires_at"] = iso_utc(datetime.now(UTC) - timedelta(seconds=1))
    row.save(update_fields=["scim_oauth_secrets"])
    status, _headers, body = OAuth(row, made[0]["client_secret"]).post(
        authorization=OAuth(row, made[0]["client_secret"]).basic()
    )
    assert status == 401 and body["error"] == "invalid_client"
    assert add(api_client, directory_a).status_code == 201
    assert len(listed(api_client, directory_a).json()["data"]) == 6  # the expired one is still listed


@pytest.mark.parametrize(
    "body",
    [
        {"expires_in_days": 0},
        {"expires_in_days": 1096},
        {"expires_in_days": "30"},
        {"expires_in_days": True},
        {"expires_in_days": 1.5},
        {"other": 1},
    ],
)
def test_a_bad_body_is_a_400_and_adds_nothing(api_client: Client, directory_a: Directory, body: Any) -> None:
    response = add(api_client, directory_a, body)
    assert response.status_code == 400 and response.json()["data"] is None
    assert fresh(directory_a).scim_oauth_secrets == []


def test_the_bounds_are_accepted_and_the_default_is_a_year(api_client: Client, directory_a: Directory) -> None:
    for days in (1, 1095, None):
        made = add(api_client, directory_a, None if days is None else {"expires_in_days": days}).json()["data"]
        created, expires = (datetime.fromisoformat(made[k]) for k in ("created_at", "expires_at"))
        assert expires - created == timedelta(days=days or 365)


def test_the_single_secret_route_revokes_every_secret_and_makes_one_for_a_year(
    api_client: Client, directory_a: Directory
) -> None:
    one = add(api_client, directory_a).json()["data"]
    two = add(api_client, directory_a).json()["data"]
    tokens_before = [OAuth(fresh(directory_a), s["client_secret"]).token() for s in (one, two)]
    rotated = api_client.post(f"{REST}/{directory_a.id}/scim-oauth-secret", b"", content_type="application/json")
    assert rotated.status_code == 200
    secret = rotated.json()["data"]["scim"]["oauth"]["client_secret"]
    assert all(scim_status(directory_a, t) == 401 for t in tokens_before)
    [entry] = listed(api_client, directory_a).json()["data"]
    assert entry["hint"] == secret[-4:]
    created, expires = (datetime.fromisoformat(entry[k]) for k in ("created_at", "expires_at"))
    assert expires - created == timedelta(days=365)
    assert scim_status(directory_a, OAuth(fresh(directory_a), secret).token()) == 200


def test_adding_and_revoking_are_audited_with_their_actor_and_never_the_secret(
    api_client: Client, directory_a: Directory
) -> None:
    made = add(api_client, directory_a, {"expires_in_days": 10}).json()["data"]
    assert revoke(api_client, directory_a, made["id"]).status_code == 204
    added = AuditEntry.objects.get(action="directory.scim_oauth_secret_added")
    revoked = AuditEntry.objects.get(action="directory.scim_oauth_secret_revoked")
    assert added.details["credential_id"] == made["id"] == revoked.details["credential_id"]
    assert added.details["expires_at"] == made["expires_at"] and added.directory_id == directory_a.id
    assert added.details["via"] == revoked.details["via"] == "rest-api"
    assert made["client_secret"] not in json.dumps([added.details, revoked.details])


def test_the_lists_need_a_credential(client: Client, directory_a: Directory) -> None:
    assert listed(client, directory_a).status_code == 401
    assert add(client, directory_a).status_code == 401
    assert listed(client, directory_a, base=ADMIN).status_code == 401
    assert revoke(client, directory_a, "x", base=ADMIN).status_code == 401


def test_a_token_lives_the_setting_and_never_past_its_secret(
    directory_a: Directory, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.SCIM_OAUTH_TOKEN_SECONDS = 7200
    _directory, entry, secret = directory_scim_oauth_secret_add(
        directory=directory_a, expires_in_days=1, actor=TEST_ACTOR
    )
    now = int(time.time())
    monkeypatch.setattr(access_tokens, "clock", lambda: now)
    body = OAuth(fresh(directory_a), secret).grant()
    assert body["expires_in"] == 7200
    monkeypatch.setattr(access_tokens, "clock", lambda: now + 7199)
    assert scim_status(directory_a, body["access_token"]) == 200
    monkeypatch.setattr(access_tokens, "clock", lambda: now + 7200)
    assert scim_status(directory_a, body["access_token"]) == 401
    # Ten minutes before the secret expires, a token lives ten minutes.
    ends = int(datetime.fromisoformat(entry["expires_at"]).timestamp())
    monkeypatch.setattr(access_tokens, "clock", lambda: ends - 600)
    late = OAuth(fresh(directory_a), secret).grant()
    assert late["expires_in"] == 600
    monkeypatch.setattr(access_tokens, "clock", lambda: ends)
    assert scim_status(directory_a, late["access_token"]) == 401


def test_a_token_from_before_several_secrets_works_until_its_secret_is_revoked(directory_a: Directory) -> None:
    """A version 1 token (no secret id) is checked against the one secret carried over by the migration."""
    oauth = oauth_on(directory_a)
    row = fresh(directory_a)
    row.scim_oauth_secrets[0]["legacy"] = True
    row.save(update_fields=["scim_oauth_secrets"])
    expires = int(time.time()) + 3600
    payload = bytes([1]) + row.id.bytes + expires.to_bytes(8, "big") + os.urandom(8)
    old = access_tokens.PREFIX + (payload + access_tokens._mac(row.scim_oauth_secrets[0]["hash"], payload)).hex()
    assert len(old) == access_tokens.TOKEN_LENGTH_1 and scim_status(row, old) == 200
    assert scim_status(row, oauth.token()) == 200
    directory_scim_oauth_secret_revoke(directory=row, secret_id=row.scim_oauth_secrets[0]["id"], actor=TEST_ACTOR)
    assert scim_status(row, old) == 401


def _settings_value(value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SECRET_KEY": "x" * 50, "DEBUG": "false", "DJANGO_SETTINGS_MODULE": "config.settings"}
    env["SCIM_OAUTH_TOKEN_SECONDS"] = value
    code = "import config.settings as s; print(s.SCIM_OAUTH_TOKEN_SECONDS)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_lifetime_setting_is_checked_when_settings_load() -> None:
    for good in ("3600", "21600"):
        assert _settings_value(good).stdout.strip().splitlines()[-1] == good
    for bad in ("3599", "21601", "0"):
        refused = _settings_value(bad)
        assert refused.returncode != 0 and "SCIM_OAUTH_TOKEN_SECONDS must be from 3600 to 21600" in refused.stderr
