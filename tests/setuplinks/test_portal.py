"""Setup links in the portal (contract §3.1): "Invite IT admin" shows the link once, the directory's page
lists the links with their status, and a revoke button ends one at once."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from setuplinks.models import SetupLink
from tests.setuplinks.conftest import expire, make_link

pytestmark = pytest.mark.django_db
URL = re.compile(r'<code id="setup-link-url" class="value">(http://testserver/setup/([A-Za-z0-9_-]+))</code>')


def test_invite_it_admin_shows_the_link_once_with_a_copy_button(portal_client: Client, directory_a: Directory) -> None:
    page = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert 'id="invite-submit"' in page and "Invite IT admin" in page
    response = portal_client.post(
        f"/portal/directories/{directory_a.id}/setup-links",
        {"expires_in": "86400", "allow_mapping": "on", "return_url": "https://app.example.com/done"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    url, token = URL.search(html).groups()
    assert 'data-copy="setup-link-url"' in html
    assert response["Cache-Control"].startswith("max-age=0") and "no-store" in response["Cache-Control"]
    link = SetupLink.objects.get()
    assert (link.allow_mapping, link.return_url, link.created_by) == (
        True,
        "https://app.example.com/done",
        "ops@example.com",
    )
    assert (link.expires_at - link.created_at).total_seconds() == 86400
    assert Client().get(f"/setup/{token}").status_code == 200
    # The directory's page lists it afterwards, without its URL.
    page = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert f'data-link="{link.id}" data-status="active"' in page and token not in page
    entry = AuditEntry.objects.get(action="setup_link.created")
    assert entry.actor_email == "ops@example.com" and entry.details["via"] == "portal"


def test_invite_with_the_defaults_needs_one_click(portal_client: Client, directory_a: Directory) -> None:
    page = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    form = page[page.index('id="invite"') :]
    fields = dict(re.findall(r'<select name="(\w+)"[^>]*>.*?<option value="(\d+)" selected', form, re.S))
    assert fields == {"expires_in": "259200"}
    response = portal_client.post(f"/portal/directories/{directory_a.id}/setup-links", {"expires_in": "259200"})
    assert response.status_code == 200
    assert SetupLink.objects.get().allow_mapping is False


def test_invite_refuses_a_bad_return_url_next_to_its_field(portal_client: Client, directory_a: Directory) -> None:
    response = portal_client.post(
        f"/portal/directories/{directory_a.id}/setup-links", {"expires_in": "3600", "return_url": "http://app.example"}
    )
    assert response.status_code == 400
    assert 'id="id_return_url-error"' in response.content.decode()
    assert not SetupLink.objects.exists()


def test_a_deactivated_directory_offers_no_invitation(portal_client: Client, directory_a: Directory) -> None:
    directory_a.deactivated = True
    directory_a.save()
    assert 'id="invite-submit"' not in portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    response = portal_client.post(f"/portal/directories/{directory_a.id}/setup-links", {"expires_in": "3600"})
    assert response.status_code == 302
    assert not SetupLink.objects.exists()


def test_the_list_shows_each_status_and_revokes_at_once(portal_client: Client, directory_a: Directory) -> None:
    active, token = make_link(directory_a)
    old, _ = make_link(directory_a)
    expire(old)
    page = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert f'data-link="{old.id}" data-status="expired"' in page
    assert page.count(">Revoke</button>") == 1
    response = portal_client.post(f"/portal/directories/{directory_a.id}/setup-links/{active.id}/revoke")
    assert response.status_code == 302 and response["Location"].endswith("#setup-links")
    assert Client().get(f"/setup/{token}").status_code == 404
    page = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert f'data-link="{active.id}" data-status="revoked"' in page and ">Revoke</button>" not in page
    assert AuditEntry.objects.get(action="setup_link.revoked").actor_email == "ops@example.com"


def test_the_portal_routes_want_a_signed_in_admin(directory_a: Directory) -> None:
    link, token = make_link(directory_a)
    for path in ("setup-links", f"setup-links/{link.id}/revoke"):
        response = Client().post(f"/portal/directories/{directory_a.id}/{path}", {"expires_in": "3600"})
        assert response.status_code == 302 and "/portal/login" in response["Location"]
    assert SetupLink.objects.count() == 1 and Client().get(f"/setup/{token}").status_code == 200


def test_another_directorys_link_cannot_be_revoked_from_this_directory(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    theirs, token = make_link(directory_b)
    response = portal_client.post(f"/portal/directories/{directory_a.id}/setup-links/{theirs.id}/revoke")
    assert response.status_code == 404
    assert Client().get(f"/setup/{token}").status_code == 200
    assert f'data-link="{theirs.id}"' not in portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()


def _steps(html: str, marker: str) -> str:
    """The numbered steps (an <ol class="steps">) that contain `marker`."""
    for block in re.findall(r'<ol class="steps">.*?</ol>\s*(?:<div class="attribute-paths">.*?</div>)?', html, re.S):
        if marker in block:
            return block
    raise AssertionError(f"no steps with {marker!r}")


def test_the_portal_and_the_setup_page_show_the_same_provider_steps(
    portal_client: Client, directory_b: Directory
) -> None:
    directory_b.attribute_map = {"department": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department"}
    directory_b.save()
    portal = portal_client.get(f"/portal/directories/{directory_b.id}").content.decode()
    _link, token = make_link(directory_b)
    setup = Client().get(f"/setup/{token}").content.decode()
    entra = _steps(setup, "Provision on demand")
    assert entra == _steps(portal, "Provision on demand")
    assert "aadOptscim062020" in entra and "User:department" in entra
    for marker in ("Push New Users", "SCIM v2 Enterprise", "Token Key", "/ServiceProviderConfig"):
        assert _steps(portal, marker)  # every provider's steps are on the directory's page


def test_the_portal_audit_trail_names_a_link_as_the_actor(portal_client: Client, directory_a: Directory) -> None:
    link, token = make_link(directory_a)
    assert Client().get(f"/setup/{token}").status_code == 200
    page = portal_client.get("/portal/audit", {"actor": f"setup-link:{link.id}"}).content.decode()
    assert page.count('<code class="action">') == 1 and "setup_link.opened" in page
    assert f'<td data-label="Admin">setup-link:{link.id}</td>' in page
