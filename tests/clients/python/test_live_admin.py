"""roster_client against a live Roster (tests/clients/conftest.py): setup links, the deprovision guard's held
changes, and the SCIM endpoint's OAuth client secret and static-secret switch."""

from __future__ import annotations

import httpx
import pytest
from roster_client import (
    ApprovedResult,
    BadRequestError,
    ConflictError,
    DiscardedResult,
    HeldChange,
    NewScimOAuthSecret,
    NewSetupLink,
    NotFoundError,
    Roster,
    ScimOAuthSecret,
    SetupLink,
)

from tests.clients.conftest import PRODUCT, TENANT, LiveRoster

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def roster(live_roster: LiveRoster) -> Roster:
    with Roster(base_url=live_roster.url, api_key=live_roster.api_key) as client:
        yield client


def test_setup_links_create_list_revoke(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT, type="okta-scim-v2")
    link = roster.setup_links.create(
        directory.id, expires_in=3600, return_url="https://app.example.com/done", allow_mapping=True
    )
    assert isinstance(link, NewSetupLink) and link.status == "active" and link.allow_mapping is True
    assert link.url.startswith(f"{live_roster.url}/setup/") and link.return_url == "https://app.example.com/done"
    page = httpx.get(link.url, timeout=30)
    assert page.status_code == 200 and "Okta" in page.text

    (listed,) = roster.setup_links.list(directory.id)
    assert isinstance(listed, SetupLink) and listed.id == link.id and listed.opened_count == 1
    assert "url" not in listed.to_dict()  # the token is shown once, never listed

    roster.setup_links.revoke(directory.id, link.id)
    assert [item.status for item in roster.setup_links.list(directory.id)] == ["revoked"]
    assert httpx.get(link.url, timeout=30).status_code == 404
    with pytest.raises(BadRequestError) as bad:
        roster.setup_links.create(directory.id, expires_in=10)
    assert "expires_in" in bad.value.message
    with pytest.raises(NotFoundError):
        roster.setup_links.revoke(directory.id, "00000000-0000-0000-0000-000000000000")


def test_held_changes_list_approve_discard(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    guarded = roster.directories.update(directory.id, deprovision_guard={"max_users": 1, "max_percent": 1})
    assert guarded.deprovision_guard.max_users == 1 and guarded.deprovision_guard.window_minutes == 60
    secret = directory.scim.secret
    users = [live_roster.scim_user(directory.id, secret, f"user{n}@acme.test") for n in range(4)]
    for user in users[:3]:  # the first goes through; the second trips the guard; the third is held too
        live_roster.scim("DELETE", directory.id, secret, f"/Users/{user['id']}")

    held = list(roster.held_changes.list(directory.id))
    assert all(isinstance(item, HeldChange) for item in held)
    assert [(item.user_id, item.change) for item in held] == [(users[1]["id"], "delete"), (users[2]["id"], "delete")]
    assert roster.directories.get(directory.id).guard.state == "tripped"
    # The application still sees the held users until a person approves.
    assert len(roster.users.list(tenant=TENANT, product=PRODUCT, directory_id=directory.id)) == 3

    approved = roster.held_changes.approve(directory.id, [held[0].id])
    assert isinstance(approved, ApprovedResult) and approved.approved == 1
    discarded = roster.held_changes.discard(directory.id)  # None: all that is left
    assert isinstance(discarded, DiscardedResult) and discarded.discarded == 1
    assert list(roster.held_changes.list(directory.id)) == []
    assert roster.directories.get(directory.id).guard.state == "armed"
    remaining = {user.id for user in roster.users.list(tenant=TENANT, product=PRODUCT, directory_id=directory.id)}
    assert remaining == {users[2]["id"], users[3]["id"]}
    with pytest.raises(ValueError):
        roster.held_changes.approve(directory.id, [])
    with pytest.raises(BadRequestError):
        roster.held_changes.approve(directory.id, [held[0].id])  # no longer held


def test_scim_oauth_secret_and_the_static_secret_switch(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    assert directory.scim.oauth.enabled is False and directory.scim.oauth.client_id == directory.id
    with pytest.raises(ConflictError):  # no OAuth client secret yet: the static secret is the only way in
        roster.directories.update(directory.id, static_secret_enabled=False)

    rotated = roster.directories.rotate_scim_oauth_secret(directory.id)
    oauth = rotated.scim.oauth
    assert oauth.enabled is True and oauth.client_secret and oauth.token_endpoint.startswith(live_roster.url)
    assert roster.directories.get(directory.id).scim.oauth.client_secret is None  # shown once
    token = httpx.post(
        oauth.token_endpoint,
        data={"grant_type": "client_credentials"},
        auth=(oauth.client_id, oauth.client_secret),
        timeout=30,
    ).json()["access_token"]

    off = roster.directories.update(directory.id, static_secret_enabled=False)
    assert off.scim.static_secret_enabled is False
    users_url = f"{live_roster.url}/api/scim/v2.0/{directory.id}/Users"
    assert httpx.get(users_url, headers={"Authorization": f"Bearer {directory.scim.secret}"}).status_code == 401
    assert httpx.get(users_url, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    # A new client secret ends every token issued with the previous one.
    roster.directories.rotate_scim_oauth_secret(directory.id)
    assert httpx.get(users_url, headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_several_scim_oauth_secrets_listed_added_and_revoked(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    one = roster.directories.add_scim_oauth_secret(directory.id, expires_in_days=30)
    two = roster.directories.add_scim_oauth_secret(directory.id)
    assert isinstance(one, NewScimOAuthSecret) and one.client_secret and one.expires_at > one.created_at
    listed = roster.directories.scim_oauth_secrets(directory.id)
    assert [s.id for s in listed] == [two.id, one.id] and all(isinstance(s, ScimOAuthSecret) for s in listed)
    assert listed[1].hint == one.client_secret[-4:] and listed[1].last_used_at is None

    def grant(secret: str) -> str:
        answer = httpx.post(
            directory.scim.oauth.token_endpoint,
            data={"grant_type": "client_credentials"},
            auth=(directory.id, secret),
            timeout=30,
        )
        return answer.json()["access_token"]

    users_url = f"{live_roster.url}/api/scim/v2.0/{directory.id}/Users"
    first, second = grant(one.client_secret), grant(two.client_secret)
    roster.directories.revoke_scim_oauth_secret(directory.id, one.id)
    assert httpx.get(users_url, headers={"Authorization": f"Bearer {first}"}).status_code == 401
    assert httpx.get(users_url, headers={"Authorization": f"Bearer {second}"}).status_code == 200
    with pytest.raises(NotFoundError):
        roster.directories.revoke_scim_oauth_secret(directory.id, one.id)
    with pytest.raises(BadRequestError):
        roster.directories.add_scim_oauth_secret(directory.id, expires_in_days=0)
