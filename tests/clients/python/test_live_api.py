"""roster_client against a live Roster (tests/clients/conftest.py): every method of directories, users and
groups, paging across several pages, filters, and the errors as Roster answers them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from roster_client import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Group,
    GroupDetail,
    NotFoundError,
    Paged,
    Roster,
    RosterError,
    User,
)
from roster_client import (
    Directory as DirectoryResult,
)

from core.comparison import comparison_key
from directories.models import Directory, DirectoryUser
from tests.clients.conftest import PRODUCT, TENANT, LiveRoster
from tests.faults.stack import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


class CountingRoster:
    """A Roster client whose requests are counted (paths and queries), to see what a list fetched."""

    def __init__(self, live: LiveRoster) -> None:
        self.requests: list[httpx.Request] = []
        self.http = httpx.Client(timeout=30, event_hooks={"request": [self.requests.append]})
        self.client = Roster(base_url=live.url, api_key=live.api_key, http_client=self.http)


@pytest.fixture
def counting(live_roster: LiveRoster) -> Iterator[CountingRoster]:
    counted = CountingRoster(live_roster)
    yield counted
    counted.http.close()


@pytest.fixture
def roster(counting: CountingRoster) -> Roster:
    return counting.client


def _bulk_users(directory_id: str, count: int) -> list[DirectoryUser]:
    directory = Directory.objects.get(pk=directory_id)
    rows = []
    for n in range(count):
        name = f"user{n:03d}@acme.test"
        row = DirectoryUser(
            directory=directory, user_name=name, user_name_key=comparison_key(name), email=name, email_key=name
        )
        row.raw = {"id": str(row.id), "userName": name}
        rows.append(row)
    return DirectoryUser.objects.bulk_create(rows)


def test_directories_create_get_list_update_delete(roster: Roster) -> None:
    created = roster.directories.create(
        name="Acme Okta", tenant=TENANT, product=PRODUCT, type="okta-scim-v2", webhook_url=None, webhook_secret=None
    )
    assert isinstance(created, DirectoryResult)
    assert created.name == "Acme Okta" and created.type == "okta-scim-v2" and created.tenant == TENANT
    assert created.scim.secret and created.scim.endpoint.endswith(created.scim.path)
    assert created.webhook.endpoint is None and created.events.last_sequence == 0
    assert isinstance(created.id, str) and uuid.UUID(created.id)
    assert Directory.objects.filter(pk=created.id, name="Acme Okta").exists()

    assert roster.directories.get(created.id) == created
    other = roster.directories.create(tenant=TENANT, product=PRODUCT)
    roster.directories.create(tenant="globex", product=PRODUCT)
    assert [d.id for d in roster.directories.list(tenant=TENANT, product=PRODUCT)] == [created.id, other.id]

    updated = roster.directories.update(
        created.id, log_webhook_events=True, name="Renamed", attribute_map={"employee_id": "externalId"}
    )
    assert updated.log_webhook_events is True and updated.name == "Renamed"
    assert updated.attribute_map == {"employee_id": "externalId"}
    # Fields not given stay as they are; None clears what may be cleared.
    assert roster.directories.update(created.id, attribute_map=None).attribute_map == {}
    # The SCIM rate limit: the directory's own, then the deployment's again (None).
    assert created.scim_rate_limit is None
    assert roster.directories.update(created.id, scim_rate_limit=2400).scim_rate_limit == 2400
    assert roster.directories.update(created.id, scim_rate_limit=None).scim_rate_limit is None
    limited = roster.directories.create(tenant=f"{TENANT}-limited", product=PRODUCT, scim_rate_limit=0)
    assert limited.scim_rate_limit == 0
    assert roster.directories.get(created.id).name == "Renamed"

    roster.directories.delete(created.id)
    assert not Directory.objects.filter(pk=created.id).exists()
    with pytest.raises(NotFoundError) as raised:
        roster.directories.get(created.id)
    assert raised.value.status == 404 and raised.value.message == "Directory not found."
    assert raised.value.request_id


def test_scim_secret_rotation_and_the_logs(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    rotated = roster.directories.rotate_scim_secret(directory.id, grace_seconds=600)
    assert rotated.scim.secret != directory.scim.secret and rotated.scim.previous_secret_expires_at
    # The previous secret still works during the grace; then it is revoked.
    live_roster.scim_user(directory.id, directory.scim.secret, "ann@acme.test")
    revoked = roster.directories.revoke_previous_scim_secret(directory.id)
    assert revoked.scim.previous_secret_expires_at is None
    assert list(roster.directories.deliveries(directory.id)) == []  # no webhook, nothing attempted
    with pytest.raises(httpx.HTTPStatusError):
        httpx.get(
            f"{live_roster.url}/api/scim/v2.0/{directory.id}/Users",
            headers={"Authorization": f"Bearer {directory.scim.secret}"},
        ).raise_for_status()
    # Written by the server's background writer a moment later.
    assert wait_for(lambda: len(roster.directories.scim_requests(directory.id, failed=True)) == 1, timeout=10)
    (entry,) = roster.directories.scim_requests(directory.id, status=401)
    assert entry.method == "GET" and entry.path.endswith("/Users")


def test_users_list_reads_every_page_lazily(roster: Roster, counting: CountingRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    made = _bulk_users(directory.id, 250)
    expected = [str(row.id) for row in sorted(made, key=lambda row: (row.created_at, row.id))]
    counting.requests.clear()
    users = roster.users.list(tenant=TENANT, product=PRODUCT, page_limit=100)
    assert isinstance(users, Paged) and counting.requests == []  # nothing fetched before it is read
    first = next(iter(users))
    assert isinstance(first, User) and len(counting.requests) == 1
    assert [u.id for u in users] == expected
    offsets = [(r.url.params["pageOffset"], r.url.params["pageLimit"]) for r in counting.requests]
    assert offsets == [("0", "100"), ("100", "100"), ("200", "100")]
    assert len(users) == 250 and users[249].id == expected[-1]  # what was fetched, not fetched again
    assert len(counting.requests) == 3
    # Exactly a page's worth: one more (empty) read tells the list is over.
    assert len(roster.users.list(tenant=TENANT, product=PRODUCT, page_limit=125)) == 250
    assert len(counting.requests) == 6


def test_users_filters_get_and_groups(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    secret = directory.scim.secret
    ann = live_roster.scim_user(
        directory.id,
        secret,
        "ann",
        name={"givenName": "Ann", "familyName": "Lee"},
        emails=[{"value": "Ann@Acme.test", "primary": True}],
    )
    bob = live_roster.scim_user(directory.id, secret, "bob", active=False, emails=[{"value": "bob@acme.test"}])
    group = live_roster.scim(
        "POST",
        directory.id,
        secret,
        "/Groups",
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": "Eng",
            "members": [{"value": ann["id"]}],
        },
    )
    by_email = list(roster.users.list(tenant=TENANT, product=PRODUCT, email="ann@acme.TEST"))
    assert [u.id for u in by_email] == [ann["id"]]
    assert by_email[0].first_name == "Ann" and by_email[0].raw["userName"] == "ann" and by_email[0].active is True
    assert [u.id for u in roster.users.list(tenant=TENANT, product=PRODUCT, active=False)] == [bob["id"]]
    assert [u.id for u in roster.users.list(tenant=TENANT, product=PRODUCT, group=group["id"])] == [ann["id"]]
    assert [u.id for u in roster.users.list(tenant=TENANT, product=PRODUCT, directory_id=directory.id)] == [
        ann["id"],
        bob["id"],
    ]
    # The newest updated_at seen, passed back as is, does not return that user (strictly after, as shown).
    newest = max(u.updated_at for u in roster.users.list(tenant=TENANT, product=PRODUCT))
    assert list(roster.users.list(tenant=TENANT, product=PRODUCT, updated_after=newest)) == []

    got = roster.users.get(ann["id"], tenant=TENANT, product=PRODUCT)
    assert got.id == ann["id"] and got.email == "Ann@Acme.test" and got.roles == []
    assert [g.name for g in roster.users.groups(ann["id"], tenant=TENANT, product=PRODUCT)] == ["Eng"]
    with pytest.raises(NotFoundError):
        roster.users.get(ann["id"], tenant="globex", product=PRODUCT)  # another tenant's: a 404

    assert [g.id for g in roster.groups.list(tenant=TENANT, product=PRODUCT)] == [group["id"]]
    assert list(roster.groups.list(tenant=TENANT, product=PRODUCT, name="nope")) == []
    detail = roster.groups.get(group["id"], tenant=TENANT, product=PRODUCT)
    assert isinstance(detail, GroupDetail) and detail.name == "Eng"
    assert [(m.group_id, m.user_id) for m in detail.members] == [(group["id"], ann["id"])]


def test_a_directory_s_own_users_and_groups_with_the_filters(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    other = roster.directories.create(tenant=TENANT, product=PRODUCT)
    ann = live_roster.scim_user(directory.id, directory.scim.secret, "ann", emails=[{"value": "Ann@Acme.test"}])
    bob = live_roster.scim_user(directory.id, directory.scim.secret, "bob", active=False)
    live_roster.scim_user(other.id, other.scim.secret, "carl")
    group = live_roster.scim(
        "POST",
        directory.id,
        directory.scim.secret,
        "/Groups",
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": "Eng",
            "members": [{"value": ann["id"]}],
        },
    )
    assert [u.id for u in roster.directories.users(directory.id)] == [ann["id"], bob["id"]]
    assert [u.id for u in roster.directories.users(directory.id, page_limit=1)] == [ann["id"], bob["id"]]
    assert [u.id for u in roster.directories.users(directory.id, active=False)] == [bob["id"]]
    assert [u.id for u in roster.directories.users(directory.id, email="ann@acme.TEST")] == [ann["id"]]
    assert [u.id for u in roster.directories.users(directory.id, group=group["id"])] == [ann["id"]]
    newest = max(u.updated_at for u in roster.directories.users(directory.id))
    assert list(roster.directories.users(directory.id, updated_after=newest)) == []
    assert [u.raw["userName"] for u in roster.directories.users(other.id)] == ["carl"]
    groups = list(roster.directories.groups(directory.id))
    assert [g.id for g in groups] == [group["id"]] and isinstance(groups[0], Group)
    assert list(roster.directories.groups(directory.id, name="nope")) == []
    assert list(roster.directories.groups(other.id)) == []
    with pytest.raises(NotFoundError):
        list(roster.directories.users("00000000-0000-4000-8000-000000000000"))


def test_errors_carry_status_message_and_request_id(roster: Roster, live_roster: LiveRoster) -> None:
    with pytest.raises(BadRequestError) as bad:
        roster.directories.create(tenant="ac:me", product=PRODUCT)
    assert bad.value.status == 400 and "tenant" in bad.value.message and bad.value.request_id
    with pytest.raises(AuthenticationError) as unauthorised:
        Roster(base_url=live_roster.url, api_key="wrong").directories.list(tenant=TENANT, product=PRODUCT)[0]
    assert unauthorised.value.status == 401
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    with pytest.raises(ConflictError) as conflict:  # no webhook: nothing to resend to
        roster.changes.resend(directory.id, from_sequence=1, to_sequence=2)
    assert conflict.value.status == 409 and isinstance(conflict.value, RosterError)
    with pytest.raises(NotFoundError):
        roster.groups.get(str(uuid.uuid4()), tenant=TENANT, product=PRODUCT)


def test_the_client_reads_its_address_and_key_from_the_environment(
    live_roster: LiveRoster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROSTER_URL", live_roster.url)
    monkeypatch.setenv("ROSTER_API_KEY", live_roster.api_key)
    with Roster() as roster:
        assert roster.base_url == live_roster.url
        assert list(roster.directories.list(tenant=TENANT, product=PRODUCT)) == []
    monkeypatch.delenv("ROSTER_API_KEY")
    with pytest.raises(ValueError, match="API key"):
        Roster()
