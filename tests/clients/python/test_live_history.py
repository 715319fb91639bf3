"""roster_client's history methods against a live Roster (contract §5.3): users, groups and members at a point,
and the diff between two points, pages joined."""

from __future__ import annotations

import pytest
from roster_client import BadRequestError, Diff, HistoryUser, NotFoundError, Roster

from tests.clients.conftest import PRODUCT, TENANT, LiveRoster

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def roster(live_roster: LiveRoster) -> Roster:
    with Roster(base_url=live_roster.url, api_key=live_roster.api_key) as client:
        yield client


def test_history_snapshots_and_diff(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    secret = directory.scim.secret
    users = [live_roster.scim_user(directory.id, secret, f"h{n}@acme.test") for n in range(3)]
    group = live_roster.scim(
        "POST",
        directory.id,
        secret,
        "/Groups",
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": "Staff",
            "members": [{"value": users[0]["id"]}, {"value": users[1]["id"]}],
        },
    )
    middle = roster.directories.get(directory.id).events.last_sequence
    live_roster.scim("DELETE", directory.id, secret, f"/Users/{users[0]['id']}")

    then = list(roster.history.users(directory.id, sequence=middle, page_limit=2))
    assert all(isinstance(user, HistoryUser) for user in then)
    assert [user.id for user in then] == [user["id"] for user in users]
    assert then[0].groups == [group["id"]]
    (staff,) = roster.history.groups(directory.id, sequence=middle)
    assert staff.members == 2
    assert sorted(roster.history.group_members(directory.id, group["id"], sequence=middle)) == sorted(
        user["id"] for user in users[:2]
    )
    assert [user.id for user in roster.history.users(directory.id)] == [user["id"] for user in users[1:]]

    diff = roster.history.diff(directory.id, from_=middle, page_limit=1)
    assert isinstance(diff, Diff)
    assert [user.id for user in diff.users.deleted] == [users[0]["id"]]
    assert [(m.group_id, m.user_id) for m in diff.memberships.removed] == [(group["id"], users[0]["id"])]
    everything = roster.history.diff(directory.id, from_=1, page_limit=1)
    assert len(everything.users.created) == 2 and everything.next is None

    with pytest.raises(BadRequestError):
        list(roster.history.users(directory.id, sequence=10**6))
    with pytest.raises(NotFoundError):
        roster.history.diff("00000000-0000-0000-0000-000000000000", from_=1)
