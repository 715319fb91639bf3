"""POST/GET/PATCH/DELETE /api/v1/directory-sync, through both prefixes."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from tests.actors import TEST_ACTOR
from tests.restapi.conftest import make_group, make_user

pytestmark = pytest.mark.django_db

BASE = "/api/v1/directory-sync"
PREFIXES = ["/api/v1/directory-sync", "/api/v1/dsync"]


def post(client: Client, body: object, path: str = BASE) -> tuple[int, dict]:
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    response = client.post(path, raw, content_type="application/json")
    return response.status_code, response.json()


def assert_error(status: int, body: dict, code: int, *fragments: str) -> None:
    assert status == code, body
    assert body["data"] is None
    assert body["error"]["code"] == code
    for fragment in fragments:
        assert fragment in body["error"]["message"], body["error"]["message"]


# --- create ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_create_answers_201_with_the_spec_shape(api_client: Client, prefix: str) -> None:
    status, body = post(api_client, {"tenant": "acme", "product": "crm", "type": "okta-scim-v2"}, prefix)
    assert status == 201
    assert body["error"] is None
    data = body["data"]
    directory = Directory.objects.get(pk=data["id"])
    assert data["tenant"] == "acme" and data["product"] == "crm" and data["type"] == "okta-scim-v2"
    assert data["name"]  # a readable default built from tenant and product
    assert "acme" in data["name"] and "crm" in data["name"]
    assert data["log_webhook_events"] is False and data["deactivated"] is False
    assert data["scim"]["path"] == f"/api/scim/v2.0/{directory.id}"
    assert data["scim"]["endpoint"] == f"http://testserver/api/scim/v2.0/{directory.id}"
    assert data["scim"]["secret"] == directory.scim_secret
    assert len(data["scim"]["secret"]) >= 43  # 32 random bytes, url-safe base64
    assert data["webhook"] == {"endpoint": None, "secret": None}


def test_create_for_azure_adds_the_scim_flag_to_the_endpoint(api_client: Client) -> None:
    status, body = post(api_client, {"tenant": "acme", "product": "crm", "type": "azure-scim-v2"})
    assert status == 201
    assert body["data"]["scim"]["endpoint"].endswith(f"/api/scim/v2.0/{body['data']['id']}?aadOptscim062020")
    assert body["data"]["scim"]["path"] == f"/api/scim/v2.0/{body['data']['id']}"


def test_create_defaults_to_the_generic_type(api_client: Client) -> None:
    status, body = post(api_client, {"tenant": "acme", "product": "crm"})
    assert status == 201
    assert body["data"]["type"] == "generic-scim-v2"
    assert "?" not in body["data"]["scim"]["endpoint"]


def test_create_with_webhook_url_generates_a_strong_secret(api_client: Client) -> None:
    status, body = post(api_client, {"tenant": "a", "product": "p", "webhook_url": "https://app.example.com/hook"})
    assert status == 201
    assert body["data"]["webhook"]["endpoint"] == "https://app.example.com/hook"
    assert len(body["data"]["webhook"]["secret"]) >= 43
    assert Directory.objects.get(pk=body["data"]["id"]).webhook_secret == body["data"]["webhook"]["secret"]


def test_create_keeps_a_given_webhook_secret_and_flags(api_client: Client) -> None:
    status, body = post(
        api_client,
        {
            "name": "Acme prod",
            "tenant": "a",
            "product": "p",
            "webhook_url": "https://app.example.com/hook",
            "webhook_secret": "my-own-secret",
            "log_webhook_events": True,
        },
    )
    assert status == 201
    assert body["data"]["name"] == "Acme prod"
    assert body["data"]["webhook"]["secret"] == "my-own-secret"
    assert body["data"]["log_webhook_events"] is True


def test_create_accepts_a_body_sent_without_a_json_content_type(api_client: Client) -> None:
    # curl -d sends application/x-www-form-urlencoded unless told otherwise.
    response = api_client.post(
        BASE, '{"tenant": "acme", "product": "crm"}', content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 201
    assert Directory.objects.filter(tenant="acme").count() == 1


def test_create_records_an_audit_entry_naming_the_api_key(api_client: Client) -> None:
    status, body = post(api_client, {"tenant": "acme", "product": "crm"})
    assert status == 201
    entry = AuditEntry.objects.get(action="directory.created")
    assert entry.target_id == body["data"]["id"]
    assert entry.details["via"] == "rest-api"
    assert entry.details["credential"] == "API_KEYS"
    assert "test-env-api-key" not in json.dumps(entry.details)


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ({"product": "crm"}, ["tenant", "required"]),
        ({"tenant": "acme"}, ["product", "required"]),
        ({"tenant": "", "product": "crm"}, ["tenant", "required"]),
        ({"tenant": "  ", "product": "crm"}, ["tenant", "required"]),
        ({"tenant": "ac:me", "product": "crm"}, ["tenant", ":"]),
        ({"tenant": "acme", "product": "c:rm"}, ["product", ":"]),
        ({"tenant": "acme", "product": "crm", "type": "ldap"}, ["type", "okta-scim-v2", "azure-scim-v2", "generic"]),
        ({"tenant": "acme", "product": "crm", "webhook_secret": "s3cret"}, ["webhook_secret", "webhook_url"]),
        ({"tenant": "acme", "product": "crm", "webhook_url": "ftp://example.com/x"}, ["webhook_url", "http"]),
        ({"tenant": "acme", "product": "crm", "webhook_url": "javascript:alert(1)"}, ["webhook_url", "http"]),
        ({"tenant": 42, "product": "crm"}, ["tenant", "string"]),
        ({"tenant": "acme", "product": ["crm"]}, ["product", "string"]),
        ({"tenant": "acme", "product": "crm", "name": {"x": 1}}, ["name", "string"]),
        ({"tenant": "acme", "product": "crm", "log_webhook_events": "yes"}, ["log_webhook_events", "true or false"]),
        ({"tenant": "acme", "product": "crm", "type": 3}, ["type", "string"]),
        ({"tenant": "ac\u0000me", "product": "crm"}, ["tenant", "NUL"]),
        ({"tenant": "acme", "product": "crm", "name": "a\nb"}, ["name", "control characters"]),
        ({"tenant": "acme", "product": "crm", "webhook_url": "https://h.example.com/\u0000"}, ["webhook_url"]),
    ],
)
def test_create_rejects_invalid_input_with_a_clear_400(api_client: Client, body: dict, fragments: list[str]) -> None:
    status, answer = post(api_client, body)
    assert_error(status, answer, 400, *fragments)
    assert Directory.objects.count() == 0


def test_unknown_type_message_lists_every_allowed_type(api_client: Client) -> None:
    status, body = post(api_client, {"tenant": "acme", "product": "crm", "type": "ldap"})
    assert_error(status, body, 400)
    for allowed in ("okta-scim-v2", "azure-scim-v2", "onelogin-scim-v2", "jumpcloud-scim-v2", "generic-scim-v2"):
        assert allowed in body["error"]["message"]


@pytest.mark.parametrize("raw", ['{"tenant": "acme",', "tenant=acme&product=crm", "{'tenant': 'acme'}", "\xff"])
def test_create_rejects_a_body_that_is_not_json(api_client: Client, raw: str) -> None:
    status, body = post(api_client, raw)
    assert_error(status, body, 400, "not valid JSON")
    assert Directory.objects.count() == 0


@pytest.mark.parametrize("raw", ["[]", '["acme"]', '"acme"', "42", "null", "true"])
def test_create_rejects_a_json_body_that_is_not_an_object(api_client: Client, raw: str) -> None:
    status, body = post(api_client, raw)
    assert_error(status, body, 400, "JSON object")
    assert Directory.objects.count() == 0


def test_create_rejects_an_empty_body_naming_the_missing_tenant(api_client: Client) -> None:
    status, body = post(api_client, "")
    assert_error(status, body, 400, "tenant")


def test_create_rejects_a_body_over_the_size_limit_with_413(api_client: Client, settings) -> None:  # noqa: ANN001
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    status, body = post(api_client, {"tenant": "acme", "product": "crm", "name": "x" * 2000})
    assert_error(status, body, 413, "too large")
    assert Directory.objects.count() == 0


# --- list and get -----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_list_returns_only_the_directories_of_tenant_and_product_oldest_first(
    api_client: Client, directory_a: Directory, directory_b: Directory, prefix: str
) -> None:
    from directories.services import directory_create

    second = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "second"})
    directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "hr"})
    response = api_client.get(prefix, {"tenant": "acme", "product": "crm"})
    assert response.status_code == 200
    body = response.json()
    assert body["error"] is None
    assert [d["id"] for d in body["data"]] == [str(directory_a.id), str(second.id)]
    assert body["data"][0]["scim"]["secret"] == directory_a.scim_secret


def test_list_of_an_unknown_tenant_is_empty(api_client: Client, directory_a: Directory) -> None:
    response = api_client.get(BASE, {"tenant": "nobody", "product": "crm"})
    assert response.status_code == 200
    assert response.json() == {"data": [], "error": None}


@pytest.mark.parametrize(
    ("query", "missing"), [({"product": "crm"}, "tenant"), ({"tenant": "acme"}, "product"), ({}, "tenant")]
)
def test_list_requires_tenant_and_product(api_client: Client, query: dict, missing: str) -> None:
    response = api_client.get(BASE, query)
    assert_error(response.status_code, response.json(), 400, missing, "required")


@pytest.mark.parametrize("prefix", PREFIXES)
def test_get_returns_the_directory(api_client: Client, directory_b: Directory, prefix: str) -> None:
    response = api_client.get(f"{prefix}/{directory_b.id}")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == str(directory_b.id)
    assert data["tenant"] == "globex"
    assert data["scim"]["endpoint"] == f"http://testserver/api/scim/v2.0/{directory_b.id}?aadOptscim062020"


@pytest.mark.parametrize("ident", [str(uuid.uuid4()), "not-a-uuid", "123", "0" * 40])
def test_get_of_an_unknown_or_malformed_id_is_an_enveloped_404(api_client: Client, ident: str) -> None:
    response = api_client.get(f"{BASE}/{ident}")
    assert response["Content-Type"] == "application/json"
    assert_error(response.status_code, response.json(), 404, "Directory not found")


# --- update -----------------------------------------------------------------------------------------


def patch(client: Client, path: str, body: object) -> tuple[int, dict]:
    raw = body if isinstance(body, str) else json.dumps(body)
    response = client.patch(path, raw, content_type="application/json")
    return response.status_code, response.json()


@pytest.mark.parametrize("prefix", PREFIXES)
def test_patch_updates_the_allowed_fields(api_client: Client, directory_a: Directory, prefix: str) -> None:
    status, body = patch(
        api_client,
        f"{prefix}/{directory_a.id}",
        {
            "name": "Renamed",
            "webhook_url": "https://hooks.example.com/r",
            "log_webhook_events": True,
            "deactivated": True,
        },
    )
    assert status == 200, body
    assert body["data"]["name"] == "Renamed"
    assert body["data"]["webhook"]["endpoint"] == "https://hooks.example.com/r"
    assert body["data"]["webhook"]["secret"]  # generated along with the first URL
    directory_a.refresh_from_db()
    assert directory_a.name == "Renamed"
    assert directory_a.log_webhook_events is True and directory_a.deactivated is True
    entry = AuditEntry.objects.get(action="directory.updated")
    assert set(entry.details["fields"]) >= {"name", "webhook_url", "log_webhook_events", "deactivated"}


def test_patch_sets_a_webhook_secret_and_removing_the_url_removes_it(
    api_client: Client, directory_a: Directory
) -> None:
    path = f"{BASE}/{directory_a.id}"
    status, body = patch(api_client, path, {"webhook_url": "https://h.example.com/", "webhook_secret": "mine"})
    assert status == 200 and body["data"]["webhook"] == {"endpoint": "https://h.example.com/", "secret": "mine"}
    status, body = patch(api_client, path, {"webhook_url": ""})
    assert status == 200 and body["data"]["webhook"] == {"endpoint": None, "secret": None}
    directory_a.refresh_from_db()
    assert directory_a.webhook_url == "" and directory_a.webhook_secret == ""


def test_patch_with_nothing_to_change_answers_the_directory(api_client: Client, directory_a: Directory) -> None:
    status, body = patch(api_client, f"{BASE}/{directory_a.id}", {})
    assert status == 200
    assert body["data"]["id"] == str(directory_a.id)
    assert not AuditEntry.objects.filter(action="directory.updated").exists()


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ({"tenant": "other"}, ["tenant", "Updatable"]),
        ({"name": ""}, ["name"]),
        ({"name": 5}, ["name", "string"]),
        ({"deactivated": "true"}, ["deactivated", "true or false"]),
        ({"log_webhook_events": 1}, ["log_webhook_events"]),
        ({"webhook_secret": "x"}, ["webhook_secret", "webhook_url"]),
        ({"webhook_url": "gopher://x.example.com"}, ["webhook_url", "http"]),
        ({"name": "x\u0000y"}, ["name", "NUL"]),
        ("[1, 2]", ["JSON object"]),
        ("{nope", ["not valid JSON"]),
    ],
)
def test_patch_rejects_invalid_input_and_changes_nothing(
    api_client: Client, directory_a: Directory, body: object, fragments: list[str]
) -> None:
    status, answer = patch(api_client, f"{BASE}/{directory_a.id}", body)
    assert_error(status, answer, 400, *fragments)
    fresh = Directory.objects.get(pk=directory_a.pk)
    assert (fresh.name, fresh.tenant, fresh.deactivated, fresh.webhook_url) == ("Acme Okta", "acme", False, "")


def test_patch_of_an_unknown_directory_is_404(api_client: Client) -> None:
    status, body = patch(api_client, f"{BASE}/{uuid.uuid4()}", {"name": "x"})
    assert_error(status, body, 404)


# --- delete -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_delete_removes_the_directory_with_its_users_groups_and_memberships(
    api_client: Client, directory_a: Directory, directory_b: Directory, prefix: str
) -> None:
    ann = make_user(directory_a, "ann@acme.test")
    bob = make_user(directory_a, "bob@acme.test")
    make_group(directory_a, "Engineering", [ann, bob])
    other = make_user(directory_b, "ann@globex.test")
    make_group(directory_b, "Sales", [other])

    response = api_client.delete(f"{prefix}/{directory_a.id}")
    assert response.status_code == 200
    assert response.json() == {"data": {}, "error": None}
    assert not Directory.objects.filter(pk=directory_a.pk).exists()
    assert not DirectoryUser.objects.filter(directory_id=directory_a.pk).exists()
    assert not DirectoryGroup.objects.filter(directory_id=directory_a.pk).exists()
    assert GroupMembership.objects.count() == 1  # only directory B's
    assert DirectoryUser.objects.filter(directory=directory_b).count() == 1
    assert AuditEntry.objects.filter(action="directory.deleted", target_id=str(directory_a.id)).exists()

    again = api_client.delete(f"{prefix}/{directory_a.id}")
    assert_error(again.status_code, again.json(), 404)


# --- methods ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("put", ""),
        ("delete", ""),
        ("patch", ""),
        ("post", "/{id}"),
        ("put", "/{id}"),
        ("post", "/users"),
        ("delete", "/users"),
        ("put", "/groups/{id}"),
        ("post", "/groups"),
        ("patch", "/users/{id}"),
    ],
)
def test_a_wrong_method_is_an_enveloped_405(
    api_client: Client, directory_a: Directory, method: str, suffix: str
) -> None:
    path = BASE + suffix.format(id=directory_a.id)
    response = getattr(api_client, method)(path, "{}", content_type="application/json")
    assert response["Content-Type"] == "application/json"
    assert_error(response.status_code, response.json(), 405, method.upper())
    assert Directory.objects.filter(pk=directory_a.pk).exists()


def test_options_is_an_enveloped_405_not_drf_metadata(api_client: Client) -> None:
    response = api_client.options(BASE)
    assert_error(response.status_code, response.json(), 405, "OPTIONS")


def test_head_is_answered_like_get_without_a_body(api_client: Client, directory_a: Directory) -> None:
    response = api_client.head(f"{BASE}/{directory_a.id}")
    assert response.status_code == 200
    assert response.content == b""


def test_delete_removes_the_directorys_pending_events_and_delivery_log(api_client: Client) -> None:
    import uuid as uuid_mod

    from directories.services import directory_create
    from webhooks.models import WebhookDelivery, WebhookEvent
    from webhooks.services import event_record

    hooked = directory_create(
        actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "webhook_url": "https://h.example.com/"}
    )
    kept = directory_create(
        actor=TEST_ACTOR, data={"tenant": "u", "product": "p", "webhook_url": "https://h.example.com/"}
    )
    for directory in (hooked, kept):
        event_record(directory=directory, event_type="user.created", data={"id": "x"})
        WebhookDelivery.objects.create(
            directory=directory, event_id=uuid_mod.uuid4(), event_type="user.created", payload="{}"
        )
    response = api_client.delete(f"{BASE}/{hooked.id}")
    assert response.status_code == 200
    assert not WebhookDelivery.objects.filter(directory_id=hooked.id).exists()
    assert not WebhookEvent.objects.filter(directory_id=hooked.id, target="directory").exists()
    assert WebhookDelivery.objects.filter(directory_id=kept.id).count() == 1
    assert WebhookEvent.objects.filter(directory_id=kept.id).count() == 1


@pytest.mark.parametrize("path", [BASE, f"{BASE}/users", f"{BASE}/groups"])
def test_a_nul_character_in_tenant_or_product_is_a_400_not_a_database_error(api_client: Client, path: str) -> None:
    response = api_client.get(f"{path}?tenant=ac%00me&product=crm")
    assert_error(response.status_code, response.json(), 400, "tenant", "NUL")
    response = api_client.get(f"{path}?tenant=acme&product=c%00rm")
    assert_error(response.status_code, response.json(), 400, "product", "NUL")
