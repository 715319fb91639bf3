"""Directory pages: list, search, paging, create and edit validation, toggles, rotation, delete."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adminauth.models import AdminUser
from audit.models import AuditEntry
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.portal.conftest import make_group, make_user

pytestmark = pytest.mark.django_db


def field_error(html: str, field: str) -> str:
    """The error message rendered under one form field (empty when there is none)."""
    match = re.search(rf'<p class="field-error" id="id_{field}-error">(.*?)</p>', html)
    return match.group(1) if match else ""


def valid_create(**overrides: str) -> dict[str, str]:
    data = {"tenant": "initech", "product": "crm", "type": "okta-scim-v2", "name": "", "webhook_url": ""}
    data.update(overrides)
    return data


# --- list -----------------------------------------------------------------------------------------


def test_list_shows_directories_with_user_and_group_counts(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    users = [make_user(directory_a, f"u{i}@acme.test") for i in range(3)]
    make_group(directory_a, "Eng", users)
    make_group(directory_a, "Ops", users[:1])
    response = portal_client.get("/portal/")
    rows = {d.name: (d.user_count, d.group_count) for d in response.context["page"].object_list}
    assert rows == {"Acme Okta": (3, 2), "Globex Entra": (0, 0)}
    assert b"Acme Okta" in response.content and b"Globex Entra" in response.content


def test_list_search_matches_name_tenant_or_product(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    def names(query: str) -> list[str]:
        return [d.name for d in portal_client.get(f"/portal/?{query}").context["page"].object_list]

    assert names("q=globex") == ["Globex Entra"]
    assert names("q=OKTA") == ["Acme Okta"]
    assert names("tenant=acme") == ["Acme Okta"]
    assert names("product=crm") == ["Globex Entra", "Acme Okta"]
    assert names("product=hr") == []
    assert b"No directory matches" in portal_client.get("/portal/?q=zzz").content


def test_list_pages_by_fifty(portal_client: Client, db: None) -> None:
    for i in range(55):
        directory_create(actor=TEST_ACTOR, data={"tenant": f"t{i:02d}", "product": "p"})
    first = portal_client.get("/portal/")
    second = portal_client.get("/portal/?page=2")
    assert len(first.context["page"].object_list) == 50
    assert len(second.context["page"].object_list) == 5
    assert not {d.id for d in first.context["page"].object_list} & {d.id for d in second.context["page"].object_list}
    assert b'rel="next"' in first.content
    # A nonsense page number shows a real page instead of failing.
    assert portal_client.get("/portal/?page=abc").status_code == 200
    assert portal_client.get("/portal/?page=999").context["page"].number == 2


def test_list_empty_state_invites_to_create(portal_client: Client) -> None:
    assert b"No directories yet" in portal_client.get("/portal/").content


# --- create ---------------------------------------------------------------------------------------


def test_create_makes_the_directory_audits_once_and_shows_its_scim_endpoint(
    portal_client: Client, admin_user: AdminUser
) -> None:
    response = portal_client.post("/portal/directories/new", valid_create(webhook_url="https://app.example.com/h"))
    directory = Directory.objects.get(tenant="initech")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/portal/directories/{directory.id}"
    assert directory.type == "okta-scim-v2"
    assert directory.webhook_url == "https://app.example.com/h"
    assert len(directory.webhook_secret) >= 43  # generated
    entries = AuditEntry.objects.filter(directory_id=directory.id)
    assert [(e.action, e.actor_id) for e in entries] == [("directory.created", admin_user.id)]
    page = portal_client.get(response.headers["Location"]).content.decode()
    assert f"http://testserver/api/scim/v2.0/{directory.id}" in page
    assert directory.scim_secret in page
    assert "Directory created" in page


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"tenant": ""}, "tenant", "tenant is required."),
        ({"tenant": "   "}, "tenant", "tenant is required."),
        ({"product": ""}, "product", "product is required."),
        ({"tenant": "a:b"}, "tenant", "tenant must not contain &#x27;:&#x27;."),
        ({"product": "x:y"}, "product", "product must not contain &#x27;:&#x27;."),
        ({"webhook_secret": "s3cret"}, "webhook_secret", "webhook_secret needs a webhook_url."),
        ({"webhook_url": "ftp://example.com/x"}, "webhook_url", "webhook_url must be an http or https URL."),
        ({"webhook_url": "https://"}, "webhook_url", "webhook_url must include a host name."),
        ({"type": "ldap"}, "type", "Select a valid choice."),
        ({"name": "n" * 201}, "name", "Ensure this value has at most 200 characters"),
    ],
)
def test_create_shows_the_api_message_next_to_the_bad_field(
    portal_client: Client, overrides: dict[str, str], field: str, message: str
) -> None:
    response = portal_client.post("/portal/directories/new", valid_create(**overrides))
    assert response.status_code == 400
    assert message in field_error(response.content.decode(), field)
    assert Directory.objects.count() == 0
    assert AuditEntry.objects.count() == 0


def test_create_refuses_private_webhook_addresses_when_not_allowed(portal_client: Client, settings) -> None:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    response = portal_client.post("/portal/directories/new", valid_create(webhook_url="http://127.0.0.1:9/hook"))
    assert response.status_code == 400
    assert "blocked: non-public address" in field_error(response.content.decode(), "webhook_url")
    assert Directory.objects.count() == 0


def test_create_form_keeps_what_was_typed_after_an_error(portal_client: Client) -> None:
    response = portal_client.post("/portal/directories/new", valid_create(tenant="", product="keep-me"))
    assert b'value="keep-me"' in response.content


def test_create_default_name_comes_from_tenant_and_product(portal_client: Client) -> None:
    portal_client.post("/portal/directories/new", valid_create(type="azure-scim-v2"))
    directory = Directory.objects.get()
    assert directory.name == "initech crm (Microsoft Entra ID)"
    page = portal_client.get(f"/portal/directories/{directory.id}").content.decode()
    assert f"/api/scim/v2.0/{directory.id}?aadOptscim062020" in page


# --- detail ---------------------------------------------------------------------------------------


def test_detail_shows_endpoint_secret_copy_buttons_and_the_matching_setup_notes(
    portal_client: Client, directory_a: Directory
) -> None:
    html = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert f"http://testserver/api/scim/v2.0/{directory_a.id}</code>" in html
    assert directory_a.scim_secret in html
    assert 'data-copy="scim-endpoint"' in html and 'data-copy="scim-secret"' in html
    # The Okta notes are open for an Okta directory, the others closed.
    assert re.search(r'<details class="setup" open>\s*<summary>Okta', html)
    for other in ("Microsoft Entra ID", "OneLogin", "JumpCloud"):
        assert re.search(rf'<details class="setup">\s*<summary>{other}', html)


def test_unknown_or_malformed_directory_id_is_a_portal_404(portal_client: Client) -> None:
    for url in (
        "/portal/directories/00000000-0000-0000-0000-000000000000",
        "/portal/directories/nope",
        "/portal/directories/nope/users",
    ):
        response = portal_client.get(url)
        assert response.status_code == 404
        assert b"No such directory" in response.content


# --- edit -----------------------------------------------------------------------------------------


def edit_form(directory: Directory, **overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": directory.name,
        "webhook_url": directory.webhook_url,
        "webhook_secret": "",
    }
    if directory.log_webhook_events:
        data["log_webhook_events"] = "on"
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_edit_saves_name_webhook_and_logging_with_one_audit_entry(
    portal_client: Client, directory_a: Directory
) -> None:
    url = f"/portal/directories/{directory_a.id}/edit"
    form = edit_form(
        directory_a, name="Acme (Okta EU)", webhook_url="https://hooks.acme.test/r", log_webhook_events="on"
    )
    response = portal_client.post(url, form)
    assert response.status_code == 302
    directory_a.refresh_from_db()
    assert (directory_a.name, directory_a.webhook_url, directory_a.log_webhook_events) == (
        "Acme (Okta EU)",
        "https://hooks.acme.test/r",
        True,
    )
    secret = directory_a.webhook_secret
    assert secret
    entry = AuditEntry.objects.get(directory_id=directory_a.id)
    assert entry.action == "directory.updated"
    assert secret not in str(entry.details)
    # Saving again with an empty secret keeps the current one.
    portal_client.post(url, edit_form(directory_a))
    directory_a.refresh_from_db()
    assert directory_a.webhook_secret == secret
    # A typed secret replaces it.
    portal_client.post(url, edit_form(directory_a, webhook_secret="my-own-secret-value"))
    directory_a.refresh_from_db()
    assert directory_a.webhook_secret == "my-own-secret-value"


def test_edit_with_empty_webhook_url_removes_the_webhook(portal_client: Client, directory_a: Directory) -> None:
    directory_a.webhook_url, directory_a.webhook_secret = "https://hooks.acme.test/r", "s"
    directory_a.save()
    portal_client.post(f"/portal/directories/{directory_a.id}/edit", edit_form(directory_a, webhook_url=""))
    directory_a.refresh_from_db()
    assert (directory_a.webhook_url, directory_a.webhook_secret) == ("", "")


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"name": ""}, "name", "name must not be empty."),
        ({"name": "   "}, "name", "name must not be empty."),
        ({"webhook_url": "javascript:alert(1)"}, "webhook_url", "webhook_url must be an http or https URL."),
        ({"webhook_url": "", "webhook_secret": "x"}, "webhook_secret", "webhook_secret needs a webhook_url."),
    ],
)
def test_edit_shows_the_api_message_next_to_the_bad_field_and_changes_nothing(
    portal_client: Client, directory_a: Directory, overrides: dict[str, str], field: str, message: str
) -> None:
    before = Directory.objects.values().get(pk=directory_a.pk)
    response = portal_client.post(f"/portal/directories/{directory_a.id}/edit", edit_form(directory_a, **overrides))
    assert response.status_code == 400
    assert message in field_error(response.content.decode(), field)
    assert Directory.objects.values().get(pk=directory_a.pk) == before
    assert not AuditEntry.objects.exists()


def test_edit_without_changes_records_nothing(portal_client: Client, directory_a: Directory) -> None:
    response = portal_client.post(f"/portal/directories/{directory_a.id}/edit", edit_form(directory_a))
    assert response.status_code == 302
    assert not AuditEntry.objects.exists()


# --- toggles --------------------------------------------------------------------------------------


def test_logging_toggle_sets_the_requested_state_and_is_audited(portal_client: Client, directory_a: Directory) -> None:
    url = f"/portal/directories/{directory_a.id}/logging"
    assert portal_client.post(url, {"value": "on"}).status_code == 302
    directory_a.refresh_from_db()
    assert directory_a.log_webhook_events is True
    # A double submit asks for the same state again: no change, no second entry.
    portal_client.post(url, {"value": "on"})
    assert AuditEntry.objects.filter(action="directory.webhook_logging_toggled").count() == 1
    portal_client.post(url, {"value": "off"})
    directory_a.refresh_from_db()
    assert directory_a.log_webhook_events is False


def test_logging_toggle_from_the_deliveries_page_returns_there(portal_client: Client, directory_a: Directory) -> None:
    url = f"/portal/directories/{directory_a.id}/logging"
    response = portal_client.post(url, {"value": "on", "back": "deliveries"})
    assert response.headers["Location"] == f"/portal/directories/{directory_a.id}/deliveries"


def test_toggles_refuse_a_missing_value_and_change_nothing(portal_client: Client, directory_a: Directory) -> None:
    for action in ("logging", "active"):
        response = portal_client.post(f"/portal/directories/{directory_a.id}/{action}", {"value": "maybe"}, follow=True)
        assert b"Choose on or off." in response.content
    directory_a.refresh_from_db()
    assert (directory_a.log_webhook_events, directory_a.deactivated) == (False, False)
    assert not AuditEntry.objects.exists()


def test_toggles_need_post(portal_client: Client, directory_a: Directory) -> None:
    assert portal_client.get(f"/portal/directories/{directory_a.id}/logging").status_code == 405
    assert portal_client.get(f"/portal/directories/{directory_a.id}/active").status_code == 405


def test_deactivate_and_activate(portal_client: Client, directory_a: Directory) -> None:
    url = f"/portal/directories/{directory_a.id}/active"
    portal_client.post(url, {"value": "off"})
    directory_a.refresh_from_db()
    assert directory_a.deactivated is True
    page = portal_client.get(f"/portal/directories/{directory_a.id}").content.decode()
    assert "Deactivated" in page and ">Activate</button>" in page
    portal_client.post(url, {"value": "on"})
    directory_a.refresh_from_db()
    assert directory_a.deactivated is False
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["directory.deactivated", "directory.activated"]


# --- secrets --------------------------------------------------------------------------------------


def test_scim_secret_rotation_asks_first_then_rotates(portal_client: Client, directory_a: Directory) -> None:
    old = directory_a.scim_secret
    url = f"/portal/directories/{directory_a.id}/scim-secret"
    confirm = portal_client.get(url)
    assert confirm.status_code == 200
    assert b"stops working at once" in confirm.content
    directory_a.refresh_from_db()
    assert directory_a.scim_secret == old  # looking at the confirmation changes nothing
    response = portal_client.post(url)
    assert response.status_code == 302
    directory_a.refresh_from_db()
    assert directory_a.scim_secret != old
    page = portal_client.get(response.headers["Location"]).content.decode()
    assert directory_a.scim_secret in page and old not in page
    assert AuditEntry.objects.filter(action="directory.scim_secret_rotated", directory_id=directory_a.id).count() == 1


def test_webhook_secret_rotation_needs_a_webhook(portal_client: Client, directory_a: Directory) -> None:
    url = f"/portal/directories/{directory_a.id}/webhook-secret"
    response = portal_client.post(url, follow=True)
    assert b"has no webhook URL" in response.content
    assert not AuditEntry.objects.exists()
    directory_a.webhook_url, directory_a.webhook_secret = "https://hooks.acme.test/r", "old-secret"
    directory_a.save()
    assert portal_client.get(url).status_code == 200
    portal_client.post(url)
    directory_a.refresh_from_db()
    assert directory_a.webhook_secret not in ("old-secret", "")
    assert AuditEntry.objects.filter(action="directory.webhook_secret_rotated").count() == 1


# --- delete ---------------------------------------------------------------------------------------


def test_delete_needs_the_typed_name(portal_client: Client, directory_a: Directory) -> None:
    make_user(directory_a, "ann@acme.test")
    url = f"/portal/directories/{directory_a.id}/delete"
    confirm = portal_client.get(url)
    assert b"1 user" in confirm.content
    response = portal_client.post(url, {"confirm_name": "Acme"})
    assert response.status_code == 400
    assert "not this directory&#x27;s name" in field_error(response.content.decode(), "confirm_name")
    response = portal_client.post(url, {"confirm_name": ""})
    assert response.status_code == 400
    assert field_error(response.content.decode(), "confirm_name")
    assert Directory.objects.filter(pk=directory_a.pk).exists()


def test_delete_removes_the_directory_and_is_audited(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    make_user(directory_a, "ann@acme.test")
    response = portal_client.post(f"/portal/directories/{directory_a.id}/delete", {"confirm_name": "Acme Okta"})
    assert response.status_code == 302
    assert response.headers["Location"] == "/portal/"
    assert list(Directory.objects.values_list("pk", flat=True)) == [directory_b.pk]
    assert AuditEntry.objects.get(directory_id=directory_a.id).action == "directory.deleted"
