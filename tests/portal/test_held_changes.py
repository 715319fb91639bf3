"""The deprovision guard in the portal (contract §4.2): its settings on the Settings page, its card and the
banner listing the held changes on the directory page, the held changes page, and approving or discarding all
of them or the ticked ones (CSRF, audited)."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from adminauth.models import AdminUser
from audit.models import AuditEntry
from directories.models import Directory, DirectoryUser, HeldChange
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.scim.conftest import Scim
from tests.scim.guardkit import guard_set, users_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def tripped() -> tuple[Directory, list[str]]:
    directory = guard_set(
        directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "Acme"}),
        max_users=1,
        max_percent=1,
    )
    scim = Scim(directory)
    ids = users_make(scim, 12)
    for user_id in ids[:4]:
        assert scim.delete(f"/Users/{user_id}")[0] == 204
    directory.refresh_from_db()
    assert HeldChange.objects.count() == 3
    return directory, ids[1:4]


def test_the_directory_page_shows_the_banner_with_the_held_changes(
    portal_client: Client, tripped: tuple[Directory, list[str]]
) -> None:
    directory, held = tripped
    page = portal_client.get(f"/portal/directories/{directory.id}")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="guard-banner"' in html and "3 changes held" in html
    for user_id in held:
        assert f'value="{HeldChange.objects.get(user_id=user_id).id}"' in html
    assert "user1@guard.example" in html and 'id="guard-state">Tripped<' in html
    assert "csrfmiddlewaretoken" in html


def test_a_directory_with_nothing_held_has_no_banner(portal_client: Client) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "calm", "product": "crm"})
    html = portal_client.get(f"/portal/directories/{directory.id}").content.decode()
    assert 'id="guard-banner"' not in html and 'id="guard-state">Armed<' in html


def test_approving_the_ticked_changes(
    portal_client: Client, admin_user: AdminUser, tripped: tuple[Directory, list[str]]
) -> None:
    directory, held = tripped
    ticked = [str(HeldChange.objects.get(user_id=u).id) for u in held[:2]]
    answer = portal_client.post(
        f"/portal/directories/{directory.id}/held-changes/resolve", {"action": "approve", "ids": ticked}, follow=True
    )
    assert answer.status_code == 200 and "Approved 2 held changes" in answer.content.decode()
    assert not DirectoryUser.objects.filter(pk__in=held[:2]).exists()
    assert DirectoryUser.objects.filter(pk=held[2]).exists()
    entry = AuditEntry.objects.get(action="directory.held_changes_approved")
    assert entry.actor_id == admin_user.id and entry.details["via"] == "portal" and entry.details["count"] == 2


def test_discarding_all_from_the_held_changes_page(portal_client: Client, tripped: tuple[Directory, list[str]]) -> None:
    directory, held = tripped
    page = portal_client.get(f"/portal/directories/{directory.id}/held-changes")
    assert page.status_code == 200 and "user3@guard.example" in page.content.decode()
    answer = portal_client.post(
        f"/portal/directories/{directory.id}/held-changes/resolve",
        {"action": "discard_all", "back": "held_changes"},
    )
    assert answer.status_code == 302 and answer["Location"].endswith(f"/{directory.id}/held-changes")
    assert not HeldChange.objects.exists() and DirectoryUser.objects.filter(pk__in=held).count() == 3
    assert "Nothing is held." in portal_client.get(answer["Location"]).content.decode()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"action": "approve"}, "Tick at least one held change"),
        ({"action": "approve", "ids": [str(uuid.uuid4())]}, "Not a held change of this directory"),
        ({"action": "explode"}, "Choose approve or discard"),
    ],
)
def test_a_resolution_that_cannot_be_done_says_why_and_does_nothing(
    portal_client: Client, tripped: tuple[Directory, list[str]], data: dict, said: str
) -> None:
    directory, _held = tripped
    answer = portal_client.post(f"/portal/directories/{directory.id}/held-changes/resolve", data, follow=True)
    assert said in answer.content.decode()
    assert HeldChange.objects.count() == 3
    assert not AuditEntry.objects.filter(action__startswith="directory.held_changes").exists()


def test_resolving_needs_the_csrf_token(admin_user: AdminUser, tripped: tuple[Directory, list[str]]) -> None:
    directory, _held = tripped
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    answer = client.post(f"/portal/directories/{directory.id}/held-changes/resolve", {"action": "approve_all"})
    assert answer.status_code == 403 and HeldChange.objects.count() == 3


def test_anonymous_visitors_are_sent_to_sign_in(tripped: tuple[Directory, list[str]]) -> None:
    directory, _held = tripped
    for answer in (
        Client().get(f"/portal/directories/{directory.id}/held-changes"),
        Client().post(f"/portal/directories/{directory.id}/held-changes/resolve", {"action": "approve_all"}),
    ):
        assert answer.status_code == 302 and "/portal/login" in answer["Location"]
    assert HeldChange.objects.count() == 3


def test_an_unknown_directory_is_the_portals_404(portal_client: Client) -> None:
    for path in (f"/portal/directories/{uuid.uuid4()}/held-changes", "/portal/directories/nope/held-changes"):
        assert portal_client.get(path).status_code == 404
    assert portal_client.post(f"/portal/directories/{uuid.uuid4()}/held-changes/resolve", {}).status_code == 404


def test_the_settings_page_edits_the_guard(portal_client: Client) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "Acme"})
    page = portal_client.get(f"/portal/directories/{directory.id}/edit").content.decode()
    assert 'id="deprovision-guard"' in page and 'name="guard_max_users"' in page and 'value="10"' in page
    form = {
        "name": "Acme",
        "webhook_url": "",
        "guard_enabled": "on",
        "guard_max_users": "25",
        "guard_max_percent": "30",
    }
    answer = portal_client.post(f"/portal/directories/{directory.id}/edit", {**form, "guard_window_minutes": "120"})
    assert answer.status_code == 302
    directory.refresh_from_db()
    assert directory.deprovision_guard == {"enabled": True, "max_users": 25, "max_percent": 30, "window_minutes": 120}
    # Unticked: off. A bad number is shown next to its field, and nothing is saved.
    portal_client.post(
        f"/portal/directories/{directory.id}/edit", {**form, "guard_enabled": "", "guard_window_minutes": "120"}
    )
    directory.refresh_from_db()
    assert directory.deprovision_guard["enabled"] is False
    refused = portal_client.post(f"/portal/directories/{directory.id}/edit", {**form, "guard_max_percent": "101"})
    assert refused.status_code == 400 and 'id="id_guard_max_percent-error"' in refused.content.decode()
    directory.refresh_from_db()
    assert directory.deprovision_guard["max_percent"] == 30


def test_a_settings_post_without_the_guard_fields_leaves_the_guard_alone(portal_client: Client) -> None:
    directory = guard_set(
        directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "Acme"}), max_users=3
    )
    answer = portal_client.post(f"/portal/directories/{directory.id}/edit", {"name": "Renamed", "webhook_url": ""})
    assert answer.status_code == 302
    directory.refresh_from_db()
    assert directory.name == "Renamed" and directory.deprovision_guard["max_users"] == 3
    assert directory.deprovision_guard["enabled"] is True
