"""The portal's side of SCIM activity (contract §4.1): health badges in the directory list (filterable),
the health panel, the SCIM requests tab, and rotation with a grace window."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEntry
from directories.activity import recorder
from directories.models import Directory, ScimHealth, ScimLogEntry
from directories.services import directory_create, directory_update
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db


def scim(directory: Directory, path: str = "/Users", secret: str | None = None) -> int:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret or directory.scim_secret}")
    return client.get(f"/api/scim/v2.0/{directory.id}{path}").status_code


def badges(html: str) -> list[str]:
    return re.findall(r'data-health="([a-z_]+)"', html)


def test_the_list_shows_each_directory_s_health_and_filters_by_it(portal_client: Client) -> None:
    healthy = directory_create(actor=TEST_ACTOR, data={"name": "Okta prod", "tenant": "acme", "product": "crm"})
    failing = directory_create(actor=TEST_ACTOR, data={"name": "Entra flaky", "tenant": "acme", "product": "crm"})
    directory_create(actor=TEST_ACTOR, data={"name": "Quiet one", "tenant": "acme", "product": "crm"})
    off = directory_create(actor=TEST_ACTOR, data={"name": "Switched off", "tenant": "acme", "product": "crm"})
    scim(healthy)
    for _ in range(5):
        scim(failing, f"/Users/{uuid.uuid4()}")
    recorder.flush()
    directory_update(actor=TEST_ACTOR, directory=off, data={"deactivated": True})
    html = portal_client.get("/portal/").content.decode()
    assert sorted(badges(html)) == ["deactivated", "failing", "healthy", "never_connected"]
    for state, name in (("failing", "Entra flaky"), ("never_connected", "Quiet one"), ("deactivated", "Switched off")):
        page = portal_client.get(f"/portal/?health={state}").content.decode()
        assert badges(page) == [state] and name in page
    assert "No directory matches" in portal_client.get("/portal/?health=silent").content.decode()
    assert len(badges(portal_client.get("/portal/?health=nonsense").content.decode())) == 4  # ignored


def test_the_directory_page_has_a_health_panel(portal_client: Client, directory_a: Directory) -> None:
    assert "No SCIM request yet" in portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    scim(directory_a)
    scim(directory_a, secret="wrong")
    recorder.flush()
    html = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert badges(html) == ["invalid_credentials"]
    assert "carry a wrong secret" in html
    assert re.search(r"2 requests, 1 failed, 1 with a wrong secret", html)


def test_the_scim_requests_tab_shows_failures_in_red_with_their_bodies(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    now = timezone.now()
    failed = ScimLogEntry.objects.create(
        directory=directory_a,
        at=now,
        method="POST",
        path="/Users",
        status=409,
        scim_type="uniqueness",
        detail="userName <b>taken</b>",
        latency_ms=4,
        request_id="okta-1",
        request_body='{"userName":"ann@acme.test","password":"***"}',
        response_body='{"status":"409"}',
    )
    ScimLogEntry.objects.create(
        directory=directory_a,
        at=now - timedelta(seconds=5),
        method="GET",
        path="/Users",
        status=200,
        latency_ms=2,
        request_id="okta-0",
    )
    ScimLogEntry.objects.create(
        directory=directory_b, at=now, method="GET", path="/Groups", status=500, latency_ms=2, request_id="globex"
    )
    url = f"/portal/directories/{directory_a.id}/scim-requests"
    html = portal_client.get(url).content.decode()
    assert 'aria-current="page">SCIM requests' in html
    assert html.count('class="delivery scim-request delivery-failed"') == 1
    assert html.count('class="delivery scim-request "') == 1 and "globex" not in html
    assert "&quot;userName&quot;: &quot;ann@acme.test&quot;" in html  # pretty-printed, escaped
    assert "userName &lt;b&gt;taken&lt;/b&gt;" in html and "okta-1" in html
    only_failed = portal_client.get(url + "?status=failed").content.decode()
    assert "okta-1" in only_failed and "okta-0" not in only_failed
    detail = portal_client.get(f"{url}/{failed.id}").content.decode()
    assert "uniqueness" in detail and "okta-1" in detail
    other = ScimLogEntry.objects.get(directory=directory_b)
    assert portal_client.get(f"{url}/{other.id}").status_code == 404  # another directory's entry
    assert portal_client.get(f"{url}/not-an-id").status_code == 404


def test_logging_successful_requests_is_switched_from_the_tab_and_audited(
    portal_client: Client, directory_a: Directory
) -> None:
    url = f"/portal/directories/{directory_a.id}/scim-logging"
    html = portal_client.get(f"/portal/directories/{directory_a.id}/scim-requests").content.decode()
    assert "Log successful requests too" in html and f'action="{url}"' in html
    response = portal_client.post(url, {"value": "on", "back": "scim_requests"})
    assert response.headers["Location"] == f"/portal/directories/{directory_a.id}/scim-requests"
    assert Directory.objects.get(pk=directory_a.pk).log_scim_requests is True
    assert scim(directory_a) == 200 and recorder.flush() == 2  # its entry, its directory's counters
    assert ScimLogEntry.objects.filter(directory=directory_a, status=200).count() == 1
    portal_client.post(url, {"value": "off"})
    assert Directory.objects.get(pk=directory_a.pk).log_scim_requests is False
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["directory.scim_logging_toggled", "directory.scim_logging_toggled"]


def test_the_settings_page_switches_logging_of_successful_requests(
    portal_client: Client, directory_a: Directory
) -> None:
    form = {"name": directory_a.name, "webhook_url": "", "log_scim_requests": "on"}
    assert portal_client.post(f"/portal/directories/{directory_a.id}/edit", form).status_code == 302
    assert Directory.objects.get(pk=directory_a.pk).log_scim_requests is True


def test_rotation_can_keep_the_old_secret_for_a_day_then_it_can_be_revoked(
    portal_client: Client, directory_a: Directory
) -> None:
    old = directory_a.scim_secret
    url = f"/portal/directories/{directory_a.id}/scim-secret"
    confirm = portal_client.get(url).content.decode()
    for seconds in ("0", "3600", "86400", "604800"):
        assert f'value="{seconds}"' in confirm
    response = portal_client.post(url, {"grace_seconds": "86400"}, follow=True)
    page = response.content.decode()
    assert "keeps working until" in page and 'id="revoke-previous"' in page
    directory = Directory.objects.get(pk=directory_a.pk)
    assert directory.scim_secret != old and scim(directory, secret=old) == 200
    assert timezone.now() + timedelta(hours=23) < directory.previous_scim_secret_expires_at
    assert old not in page  # the old secret is never shown again
    entry = AuditEntry.objects.get(action="directory.scim_secret_rotated")
    about = {"via": "portal", "actor": "ops@example.com", "name": directory.name, "tenant": "acme", "product": "crm"}
    assert entry.details == {**about, "grace_seconds": 86400}
    revoked = portal_client.post(f"{url}/revoke-previous", follow=True).content.decode()
    assert "no longer works" in revoked and 'id="revoke-previous"' not in revoked
    assert scim(directory, secret=old) == 401
    assert AuditEntry.objects.filter(action="directory.previous_scim_secret_revoked").count() == 1


def test_a_grace_choice_that_is_not_offered_rotates_nothing(portal_client: Client, directory_a: Directory) -> None:
    old = directory_a.scim_secret
    response = portal_client.post(f"/portal/directories/{directory_a.id}/scim-secret", {"grace_seconds": "999999999"})
    assert response.status_code == 400 and b"field-error" in response.content
    assert Directory.objects.get(pk=directory_a.pk).scim_secret == old
    assert not ScimHealth.objects.exists() and not AuditEntry.objects.exists()
