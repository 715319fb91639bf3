"""SCIM requests with OAuth access tokens, and the static secret's switch (contract §4.3): a token works
for its directory only and until it expires; a new client secret ends every earlier one; a wrong,
expired or foreign token is the SCIM 401 of a wrong secret, byte for byte, and counts for health and the
request log like one. The token endpoint's own requests are recorded too, with nothing secret kept."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import orjson
import pytest
from django.db import connection, connections
from django.test import Client

from directories.activity import recorder
from directories.models import Directory, ScimHealth, ScimLogEntry
from directories.services import (
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_update,
)
from scim import access_tokens
from scim.access_tokens import TOKEN_LENGTH
from scim.api import scim_request
from tests.actors import TEST_ACTOR
from tests.scim.conftest import OAuth, Scim, oauth_on, user_body

# SCIM_OAUTH_TOKEN_SECONDS, as the tests run (its default).
EXPIRES_IN = 3600

pytestmark = pytest.mark.django_db

API = Client(HTTP_AUTHORIZATION="Bearer test-env-api-key")


def answer(directory: Directory, credential: str, path: str = "/Users") -> tuple[int, bytes, str]:
    """(status, body, WWW-Authenticate) of a SCIM GET with this bearer credential."""
    response = Client(HTTP_AUTHORIZATION=f"Bearer {credential}").get(f"/api/scim/v2.0/{directory.id}{path}")
    return response.status_code, response.content, response.get("WWW-Authenticate", "")


def wrong_secret(directory: Directory) -> tuple[int, bytes, str]:
    return answer(directory, "w" * 43)


def health(directory: Directory) -> dict[str, Any]:
    recorder.flush()
    return API.get(f"/api/v1/directory-sync/{directory.id}").json()["data"]["health"]


def log(directory: Directory) -> list[ScimLogEntry]:
    recorder.flush()
    return list(ScimLogEntry.objects.filter(directory=directory).order_by("at", "id"))


# --- what a token opens ------------------------------------------------------------------------------------


def test_a_token_opens_every_scim_route_of_its_directory(oauth_a: OAuth) -> None:
    scim = Scim(oauth_a.directory, secret=oauth_a.token())
    status, created = scim.post("/Users", user_body("ann@acme.test"))
    assert status == 201
    assert scim.get(f"/Users/{created['id']}")[0] == 200
    assert (
        scim.post("/Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "G"})[0] == 201
    )
    assert scim.get("/ServiceProviderConfig")[0] == 200 and scim.get("/Schemas")[0] == 200
    assert scim.delete(f"/Users/{created['id']}")[0] == 204


def test_a_token_of_another_directory_is_the_401_of_a_wrong_secret(oauth_a: OAuth, oauth_b: OAuth) -> None:
    refused = answer(oauth_a.directory, oauth_b.token())
    assert refused[0] == 401 and refused == wrong_secret(oauth_a.directory)
    assert refused[2] == 'Bearer realm="Roster SCIM"'


def test_an_expired_token_is_the_401_of_a_wrong_secret(oauth_a: OAuth, monkeypatch: pytest.MonkeyPatch) -> None:
    now = int(time.time())
    monkeypatch.setattr(access_tokens, "clock", lambda: now)
    token = oauth_a.token()
    monkeypatch.setattr(access_tokens, "clock", lambda: now + EXPIRES_IN - 1)
    assert answer(oauth_a.directory, token)[0] == 200
    monkeypatch.setattr(access_tokens, "clock", lambda: now + EXPIRES_IN)
    assert answer(oauth_a.directory, token) == wrong_secret(oauth_a.directory)


def test_a_new_client_secret_ends_every_earlier_token_at_once(oauth_a: OAuth) -> None:
    earlier = [oauth_a.token(), oauth_a.token()]
    assert all(answer(oauth_a.directory, t)[0] == 200 for t in earlier)
    directory, secret, first = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=oauth_a.directory)
    assert not first
    for token in earlier:
        assert answer(directory, token) == wrong_secret(directory)
    # The old client secret gets no token now; the new one does, and its token works.
    assert oauth_a.post(authorization=oauth_a.basic())[0] == 401
    assert answer(directory, OAuth(directory, secret).token())[0] == 200


def test_a_tampered_or_truncated_token_is_the_401_of_a_wrong_secret(oauth_a: OAuth) -> None:
    token = oauth_a.token()
    flipped = token[:-2] + ("0" if token[-2] not in "0" else "1") + token[-1]  # another hex digit, another byte
    for bad in (flipped, token[:-1], token + "A", token.replace("roster.", "roster,", 1), token.upper()):
        assert answer(oauth_a.directory, bad) == wrong_secret(oauth_a.directory), bad


def test_the_static_secret_keeps_working_beside_tokens_by_default(oauth_a: OAuth) -> None:
    assert answer(oauth_a.directory, oauth_a.directory.scim_secret)[0] == 200
    assert answer(oauth_a.directory, oauth_a.token())[0] == 200


def test_the_embedding_api_takes_a_token_and_has_no_token_endpoint(oauth_a: OAuth) -> None:
    request = {"method": "GET", "directoryId": str(oauth_a.directory.id), "resourceType": "users"}
    assert scim_request({**request, "apiSecret": oauth_a.token()})["status"] == 200
    assert scim_request({**request, "apiSecret": "roster." + "0" * (TOKEN_LENGTH - 7)})["status"] == 401
    token_route = {**request, "method": "POST", "resourceType": "oauth", "resourceId": "token"}
    assert scim_request({**token_route, "apiSecret": oauth_a.directory.scim_secret})["status"] == 404


# --- the static secret's switch -----------------------------------------------------------------------


def test_with_the_static_secret_off_it_is_refused_like_a_wrong_one_and_tokens_still_work(oauth_a: OAuth) -> None:
    directory = oauth_a.directory
    secret = directory.scim_secret
    directory, changed = directory_update(
        actor=TEST_ACTOR, directory=directory, data={"scim": {"static_secret_enabled": False}}
    )
    assert changed == ["scim_static_secret_enabled"]
    assert answer(directory, secret) == wrong_secret(directory)
    assert answer(directory, oauth_a.token())[0] == 200
    # Rotating the static secret still works while it is off (so it can come back with a fresh one) ...
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=directory)
    assert answer(directory, directory.scim_secret)[0] == 401
    # ... and turning it on makes the current one work again.
    directory, _ = directory_update(actor=TEST_ACTOR, directory=directory, data={"static_secret_enabled": True})
    assert answer(directory, directory.scim_secret)[0] == 200


def test_with_the_static_secret_off_a_previous_one_under_grace_is_refused_too(oauth_a: OAuth) -> None:
    old = oauth_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=oauth_a.directory, grace_seconds=3600)
    assert answer(directory, old)[0] == 200
    directory, _ = directory_update(
        actor=TEST_ACTOR, directory=directory, data={"scim": {"static_secret_enabled": False}}
    )
    assert answer(directory, old)[0] == answer(directory, directory.scim_secret)[0] == 401


def test_the_static_secret_cannot_go_off_while_oauth_has_no_client_secret(directory_a: Directory) -> None:
    from core.errors import Conflict

    with pytest.raises(Conflict, match="OAuth has no client secret"):
        directory_update(
            actor=TEST_ACTOR, directory=directory_a, data={"scim": {"static_secret_enabled": False}, "name": "Renamed"}
        )
    row = Directory.objects.get(pk=directory_a.pk)
    assert row.scim_static_secret_enabled and row.name == "Acme Okta"  # nothing of the update was saved
    assert answer(row, row.scim_secret)[0] == 200


# --- health and the request log --------------------------------------------------------------------------


def test_bad_tokens_count_as_auth_failures_and_make_the_state_invalid_credentials(
    oauth_a: OAuth, oauth_b: OAuth, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = oauth_a.directory
    assert answer(directory, oauth_a.token())[0] == 200
    assert health(directory)["state"] == "healthy"
    issued = time.time() - 2 * EXPIRES_IN
    monkeypatch.setattr(access_tokens, "clock", lambda: issued)
    expired = oauth_a.token()
    monkeypatch.undo()
    for bad in (oauth_b.token(), expired, "roster." + "b" * (TOKEN_LENGTH - 7)):
        assert answer(directory, bad)[0] == 401
    state = health(directory)
    assert state["state"] == "invalid_credentials"
    assert state["auth_failures_24h"] == 3 and state["requests_24h"] == 4 + 2  # the two grants count too
    assert [e.status for e in log(directory)] == [401, 401, 401]
    # A request with a good token gets past the check: the state recovers.
    assert answer(directory, oauth_a.token())[0] == 200
    assert health(directory)["state"] == "healthy"


def test_a_token_credits_no_static_secret_use(oauth_a: OAuth) -> None:
    assert answer(oauth_a.directory, oauth_a.token())[0] == 200
    recorder.flush()
    row = ScimHealth.objects.get(directory=oauth_a.directory)
    assert row.last_authenticated_at is not None and row.secret_last_used_at is None


def test_a_wrong_client_secret_at_the_token_endpoint_is_an_auth_failure_of_the_directory(oauth_a: OAuth) -> None:
    status, _h, body = oauth_a.post(f"grant_type=client_credentials&client_id={oauth_a.client_id}&client_secret=nope")
    assert status == 401
    state = health(oauth_a.directory)
    assert state["state"] == "invalid_credentials" and state["auth_failures_24h"] == 1
    [entry] = log(oauth_a.directory)
    assert (entry.method, entry.path, entry.status) == ("POST", "/oauth/token", 401)
    assert entry.scim_type == "invalid_client" and entry.detail == body["error_description"]
    assert "client_secret=***" in entry.request_body and "nope" not in entry.request_body
    assert orjson.loads(entry.response_body) == body


def test_the_token_endpoint_s_log_never_keeps_a_secret_or_a_token(oauth_a: OAuth) -> None:
    directory_update(actor=TEST_ACTOR, directory=oauth_a.directory, data={"log_scim_requests": True})
    post = f"grant_type=client_credentials&client_id={oauth_a.client_id}&client%5Fsecret={oauth_a.secret}"
    token = oauth_a.post(post)[2]["access_token"]
    oauth_a.post(f"{post}&client_secret=again")  # a second secret: refused, both masked
    basic_token = oauth_a.token()
    stored = " ".join(
        f"{e.request_body} {e.response_body} {e.query} {e.detail} {e.user_agent}" for e in log(oauth_a.directory)
    )
    assert len(log(oauth_a.directory)) == 3
    for secret in (oauth_a.secret, token, basic_token, "again"):
        assert secret not in stored
    entries = log(oauth_a.directory)
    assert orjson.loads(entries[0].response_body)["access_token"] == "***"
    assert entries[0].status == 200 and "client%5Fsecret=***" in entries[0].request_body


def test_a_grant_for_a_deactivated_directory_counts_as_its_403(oauth_a: OAuth) -> None:
    directory_update(actor=TEST_ACTOR, directory=oauth_a.directory, data={"deactivated": True})
    assert oauth_a.post(authorization=oauth_a.basic())[0] == 403
    state = health(oauth_a.directory)
    assert state["state"] == "deactivated" and state["auth_failures_24h"] == 0 and state["errors_24h"] == 1


def test_requests_to_an_unknown_directory_s_token_endpoint_are_not_recorded(oauth_a: OAuth) -> None:
    OAuth(oauth_a.directory, "").post(authorization=oauth_a.basic(), path=f"/api/scim/v2.0/{uuid.uuid4()}/oauth/token")
    recorder.flush()
    assert not ScimLogEntry.objects.exists() and not ScimHealth.objects.exists()


def test_a_refused_content_type_is_recorded_as_unchecked(oauth_a: OAuth) -> None:
    assert oauth_a.post(b"{}", content_type="application/json")[0] == 400
    state = health(oauth_a.directory)
    assert state["requests_24h"] == 1 and state["auth_failures_24h"] == 0
    [entry] = log(oauth_a.directory)
    assert entry.request_body == "" and entry.scim_type == "invalid_request"


# --- concurrency (PostgreSQL's row locks) ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_client_secret_rotations_at_once_leave_one_that_works(directory_a: Directory) -> None:
    """Each rotation answers with the secret it made, under the row's lock: the one committed last is the
    client's secret; the other gets no token, and no token of either survives the later rotation."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent rotations need PostgreSQL's row locks (CI runs this)")
    oauth = oauth_on(directory_a)
    before = oauth.token()
    barrier = threading.Barrier(2)
    made: list[str] = []

    def rotate() -> None:
        try:
            barrier.wait()
            copy = Directory.objects.get(pk=directory_a.pk)
            made.append(directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=copy)[1])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=rotate) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 2
    row = Directory.objects.get(pk=directory_a.pk)
    works = [secret for secret in made if OAuth(row, secret).post(authorization=OAuth(row, secret).basic())[0] == 200]
    assert len(works) == 1
    assert answer(row, before)[0] == 401
