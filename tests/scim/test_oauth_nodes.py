"""OAuth client credentials on every node at once (contract §4.3, §7.1): two web servers (each its own
`python -m server.web`, as two machines would run them) on the test database. A token from one node's
token endpoint works on the other; a client secret rotated through one node ends that token on the other
at its very next request; the static secret switched off through one is refused by the other. Neither
server writes a client secret or a token to its logs."""

from __future__ import annotations

import time

import pytest
import requests

from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.scim.conftest import user_body
from tests.webnodes import API_KEY, Node

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
REST = {"Authorization": f"Bearer {API_KEY}"}


def grant(node: Node, directory_id: str, secret: str) -> requests.Response:
    return requests.post(
        f"{node.url}/api/scim/v2.0/{directory_id}/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(directory_id, secret),  # client_secret_basic
        timeout=10,
    )


def users(node: Node, directory_id: str, credential: str) -> requests.Response:
    return requests.get(
        f"{node.url}/api/scim/v2.0/{directory_id}/Users",
        headers={"Authorization": f"Bearer {credential}"},
        timeout=10,
    )


def test_a_rotation_through_one_node_ends_the_token_on_the_other_at_once(nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    directory = directory_create(actor=TEST_ACTOR, data={"name": "Two nodes", "tenant": "acme", "product": "crm"})
    directory_id = str(directory.id)
    made = requests.post(f"{a.url}/api/v1/directory-sync/{directory_id}/scim-oauth-secret", headers=REST, timeout=10)
    assert made.status_code == 200, made.text
    first = made.json()["data"]["scim"]["oauth"]["client_secret"]

    # A token from node A's token endpoint works on node B (and on A).
    answer = grant(a, directory_id, first)
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-store"
    token = answer.json()["access_token"]
    pushed = requests.post(
        f"{b.url}/api/scim/v2.0/{directory_id}/Users",
        json=user_body("nodes@acme.test"),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"},
        timeout=10,
    )
    assert pushed.status_code == 201, pushed.text
    assert users(a, directory_id, token).status_code == 200

    # Rotated through node A: node B refuses the earlier token on its very next request, with the 401 of a
    # wrong secret; the old client secret gets no token from B; the new one does, and its token works on B.
    wrong = users(b, directory_id, "w" * 43)
    rotated = requests.post(f"{a.url}/api/v1/dsync/{directory_id}/scim-oauth-secret", headers=REST, timeout=10)
    second = rotated.json()["data"]["scim"]["oauth"]["client_secret"]
    refused = users(b, directory_id, token)
    assert refused.status_code == 401 and refused.content == wrong.content
    assert users(a, directory_id, token).status_code == 401
    assert grant(b, directory_id, first).status_code == 401
    fresh = grant(b, directory_id, second).json()["access_token"]
    assert users(b, directory_id, fresh).status_code == users(a, directory_id, fresh).status_code == 200

    # The static secret switched off through node B: node A refuses it next; switched on, both take it.
    static = directory.scim_secret
    off = requests.patch(
        f"{b.url}/api/v1/directory-sync/{directory_id}",
        json={"scim": {"static_secret_enabled": False}},
        headers=REST,
        timeout=10,
    )
    assert off.status_code == 200 and off.json()["data"]["scim"]["static_secret_enabled"] is False
    assert users(a, directory_id, static).status_code == 401
    assert users(a, directory_id, fresh).status_code == 200
    requests.patch(
        f"{a.url}/api/v1/directory-sync/{directory_id}",
        json={"static_secret_enabled": True},
        headers=REST,
        timeout=10,
    )
    assert users(b, directory_id, static).status_code == 200

    # Both nodes recorded the refused token as an auth failure of the directory (their flushes every 0.2 s).
    deadline = time.monotonic() + 10
    health = {}
    while time.monotonic() < deadline:
        health = requests.get(f"{a.url}/api/v1/directory-sync/{directory_id}", headers=REST, timeout=10).json()
        if health["data"]["health"]["auth_failures_24h"] >= 4:
            break
        time.sleep(0.2)
    assert health["data"]["health"]["auth_failures_24h"] >= 4

    for node in (a, b):
        text = node.logs()
        for secret in (first, second, token, fresh, static):
            assert secret not in text


def test_revoking_one_secret_through_one_node_ends_its_token_on_the_other_and_no_other(
    nodes: tuple[Node, Node],
) -> None:
    a, b = nodes
    directory = directory_create(actor=TEST_ACTOR, data={"name": "Two secrets", "tenant": "acme", "product": "crm"})
    directory_id = str(directory.id)
    secrets_url = f"{a.url}/api/v1/directory-sync/{directory_id}/scim-oauth-secrets"
    old = requests.post(secrets_url, json={"expires_in_days": 30}, headers=REST, timeout=10).json()["data"]
    new = requests.post(secrets_url, json={}, headers=REST, timeout=10).json()["data"]
    old_token = grant(b, directory_id, old["client_secret"]).json()["access_token"]
    new_token = grant(b, directory_id, new["client_secret"]).json()["access_token"]
    assert users(b, directory_id, old_token).status_code == users(b, directory_id, new_token).status_code == 200

    revoked = requests.delete(f"{secrets_url}/{old['id']}", headers=REST, timeout=10)
    assert revoked.status_code == 204
    assert users(b, directory_id, old_token).status_code == 401
    assert users(b, directory_id, new_token).status_code == 200
    assert grant(b, directory_id, old["client_secret"]).status_code == 401
    listed = requests.get(secrets_url.replace(a.url, b.url), headers=REST, timeout=10).json()["data"]
    assert [s["id"] for s in listed] == [new["id"]] and listed[0]["last_used_at"] is not None
    for node in (a, b):
        text = node.logs()
        for secret in (old["client_secret"], new["client_secret"], old_token, new_token):
            assert secret not in text
