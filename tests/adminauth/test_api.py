"""The admin API routes: enveloped, paged, audited, never leaking secrets to the trail."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from adminauth.models import AdminToken, AdminUser
from audit.models import AuditEntry
from core.comparison import comparison_key
from core.timefmt import iso_utc
from directories.models import Directory, DirectoryGroup, DirectoryUser
from tests.adminauth.conftest import ROOT, AdminSession, login
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

BASE = "/auditlog/admin/v1"


def _json(client: Client, method: str, path: str, body: object = None) -> object:
    kwargs = {} if body is None else {"data": json.dumps(body), "content_type": "application/json"}
    return getattr(client, method)(BASE + path, **kwargs)


def _ok(response, status: int = 200) -> object:  # noqa: ANN001
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] is None
    return body["data"]


def _err(response, status: int) -> str:  # noqa: ANN001
    assert response.status_code == status, response.content
    body = response.json()
    assert body["data"] is None and body["error"]["code"] == status
    return body["error"]["message"]


def _actions() -> list[str]:
    return list(AuditEntry.objects.exclude(action="admin.login").values_list("action", flat=True))


def _only_new_entry(*secrets: str) -> AuditEntry:
    entries = list(AuditEntry.objects.exclude(action="admin.login"))
    assert len(entries) == 1, [e.action for e in entries]
    serialized = json.dumps(_ok(_json(Client(HTTP_AUTHORIZATION=_only_new_entry.header), "get", "/audit")))
    for secret in secrets:
        assert secret and secret not in serialized
    return entries[0]


@pytest.fixture(autouse=True)
def _audit_reader(admin_session: AdminSession) -> None:
    _only_new_entry.header = admin_session.token_header


@pytest.fixture
def hooked(admin_client: Client, settings) -> dict:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    data = _ok(
        _json(
            admin_client,
            "post",
            "/directories",
            {"tenant": "acme", "product": "crm", "type": "okta-scim-v2", "webhook_url": "https://hooks.example.com/r"},
        ),
        201,
    )
    AuditEntry.objects.exclude(action="admin.login").delete()
    return data


# --- anonymous and unknown ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/directories"),
        ("post", "/directories"),
        ("get", "/directories/00000000-0000-0000-0000-000000000000"),
        ("patch", "/directories/00000000-0000-0000-0000-000000000000"),
        ("delete", "/directories/00000000-0000-0000-0000-000000000000"),
        ("post", "/directories/00000000-0000-0000-0000-000000000000/scim-secret"),
        ("post", "/directories/00000000-0000-0000-0000-000000000000/webhook-secret"),
        ("get", "/directories/00000000-0000-0000-0000-000000000000/users"),
        ("get", "/directories/00000000-0000-0000-0000-000000000000/groups"),
        ("get", "/directories/00000000-0000-0000-0000-000000000000/events"),
        ("post", "/token"),
        ("patch", "/token/00000000-0000-0000-0000-000000000000"),
        ("get", "/users"),
        ("put", "/user/00000000-0000-0000-0000-000000000000"),
        ("get", "/audit"),
    ],
)
def test_every_route_refuses_anonymous_and_api_key_callers(method: str, path: str, directory_a) -> None:  # noqa: ANN001
    for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer test-env-api-key")):
        _err(_json(client, method, path, {} if method in ("post", "patch", "put") else None), 401)
    assert not _actions()


def test_unknown_route_under_the_prefix_is_an_enveloped_404(admin_client: Client) -> None:
    _err(admin_client.get(BASE + "/nope"), 404)


# --- directories -------------------------------------------------------------------------------------


def test_list_shows_every_tenant_with_counts_and_search(admin_client: Client, directory_a, directory_b) -> None:  # noqa: ANN001
    DirectoryUser.objects.create(directory=directory_a, user_name="u@acme.test", user_name_key="u@acme.test")
    data = _ok(admin_client.get(BASE + "/directories"))
    assert [d["id"] for d in data] == [str(directory_a.id), str(directory_b.id)]
    assert data[0]["user_count"] == 1 and data[0]["group_count"] == 0
    assert data[0]["scim"]["secret"] == directory_a.scim_secret
    assert [d["tenant"] for d in _ok(admin_client.get(BASE + "/directories?tenant=globex"))] == ["globex"]
    assert [d["tenant"] for d in _ok(admin_client.get(BASE + "/directories?q=ACME"))] == ["acme"]
    assert _ok(admin_client.get(BASE + "/directories?product=other")) == []
    assert _ok(admin_client.get(BASE + "/directories?tenant=acme&product=crm"))[0]["id"] == str(directory_a.id)


def test_create_returns_201_with_secrets_and_one_audit_entry(admin_client: Client, settings) -> None:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    data = _ok(
        _json(
            admin_client,
            "post",
            "/directories",
            {
                "tenant": "t1",
                "product": "p1",
                "webhook_url": "https://h.example.com/x",
                "webhook_secret": "given-s3cret",
            },
        ),
        201,
    )
    assert Directory.objects.filter(pk=data["id"], tenant="t1").exists()
    entry = _only_new_entry(data["scim"]["secret"], "given-s3cret")
    assert entry.action == "directory.created"
    assert str(entry.directory_id) == data["id"]
    assert entry.actor.email == "ops@example.com"


@pytest.mark.parametrize(
    "body",
    [{}, {"tenant": "a:b", "product": "p"}, {"tenant": "t", "product": "p", "type": "ldap"}, [1], "x"],
)
def test_create_with_bad_input_is_400_and_not_audited(admin_client: Client, body) -> None:  # noqa: ANN001
    _err(_json(admin_client, "post", "/directories", body), 400)
    assert Directory.objects.count() == 0
    assert not _actions()


def test_get_one_and_404_for_unknown_or_malformed_ids(admin_client: Client, directory_a) -> None:  # noqa: ANN001
    assert _ok(admin_client.get(f"{BASE}/directories/{directory_a.id}"))["name"] == "Acme Okta"
    for bad in (uuid.uuid4(), "not-a-uuid", "1"):
        _err(admin_client.get(f"{BASE}/directories/{bad}"), 404)


def test_patch_updates_and_audits_changed_fields(admin_client: Client, hooked: dict) -> None:
    data = _ok(_json(admin_client, "patch", f"/directories/{hooked['id']}", {"name": "New", "webhook_secret": "n3w-s"}))
    assert data["name"] == "New" and data["webhook"]["secret"] == "n3w-s"
    entry = _only_new_entry("n3w-s", hooked["webhook"]["secret"], hooked["scim"]["secret"])
    assert entry.action == "directory.updated"
    assert sorted(entry.details["fields"]) == ["name", "webhook_secret"]


def test_patch_toggling_webhook_logging_is_audited_as_such(admin_client: Client, hooked: dict) -> None:
    _ok(_json(admin_client, "patch", f"/directories/{hooked['id']}", {"log_webhook_events": True}))
    assert _only_new_entry().action == "directory.webhook_logging_toggled"


def test_patch_without_change_leaves_no_entry(admin_client: Client, hooked: dict) -> None:
    _ok(_json(admin_client, "patch", f"/directories/{hooked['id']}", {"name": hooked["name"]}))
    assert not _actions()


def test_patch_with_bad_input_is_400(admin_client: Client, hooked: dict) -> None:
    _err(_json(admin_client, "patch", f"/directories/{hooked['id']}", {"tenant": "other"}), 400)
    _err(_json(admin_client, "patch", f"/directories/{hooked['id']}", {"deactivated": "yes"}), 400)
    _err(admin_client.patch(f"{BASE}/directories/{hooked['id']}", "{bad", content_type="application/json"), 400)
    assert not _actions()


def test_delete_removes_the_directory_and_its_users(admin_client: Client, hooked: dict) -> None:
    directory = Directory.objects.get(pk=hooked["id"])
    DirectoryUser.objects.create(directory=directory, user_name="a", user_name_key="a")
    assert _ok(admin_client.delete(f"{BASE}/directories/{hooked['id']}")) == {}
    assert not Directory.objects.filter(pk=hooked["id"]).exists()
    assert DirectoryUser.objects.count() == 0
    assert _only_new_entry(hooked["scim"]["secret"]).action == "directory.deleted"
    _err(admin_client.delete(f"{BASE}/directories/{hooked['id']}"), 404)


def test_scim_secret_rotation_replaces_the_stored_secret(admin_client: Client, hooked: dict) -> None:
    old = hooked["scim"]["secret"]
    data = _ok(admin_client.post(f"{BASE}/directories/{hooked['id']}/scim-secret", content_type="application/json"))
    new = data["scim"]["secret"]
    assert new != old and len(new) >= 43
    # The SCIM endpoint reads the secret from this row on every request, so the old one is dead now.
    assert Directory.objects.get(pk=hooked["id"]).scim_secret == new
    assert _only_new_entry(old, new).action == "directory.scim_secret_rotated"


def test_rotated_scim_secret_is_refused_by_the_scim_endpoint_at_once(admin_client: Client, hooked: dict) -> None:
    old = hooked["scim"]["secret"]
    users = f"/api/scim/v2.0/{hooked['id']}/Users"
    assert Client(HTTP_AUTHORIZATION=f"Bearer {old}").get(users).status_code == 200
    rotated = admin_client.post(f"{BASE}/directories/{hooked['id']}/scim-secret", content_type="application/json")
    new = _ok(rotated)["scim"]["secret"]
    assert Client(HTTP_AUTHORIZATION=f"Bearer {old}").get(users).status_code == 401
    assert Client(HTTP_AUTHORIZATION=f"Bearer {new}").get(users).status_code == 200


def test_webhook_secret_rotation(admin_client: Client, hooked: dict) -> None:
    old = hooked["webhook"]["secret"]
    data = _ok(admin_client.post(f"{BASE}/directories/{hooked['id']}/webhook-secret"))
    new = data["webhook"]["secret"]
    assert new != old
    assert Directory.objects.get(pk=hooked["id"]).webhook_secret == new
    assert _only_new_entry(old, new).action == "directory.webhook_secret_rotated"


def test_webhook_secret_rotation_without_webhook_is_400(admin_client: Client, directory_a) -> None:  # noqa: ANN001
    _err(admin_client.post(f"{BASE}/directories/{directory_a.id}/webhook-secret"), 400)
    assert not _actions()


# --- a directory's users, groups and delivery log -----------------------------------------------------


def _users(directory: Directory, n: int) -> list[DirectoryUser]:
    return [
        DirectoryUser.objects.create(
            directory=directory, user_name=f"u{i}@x.test", user_name_key=comparison_key(f"u{i}@x.test"), raw={}
        )
        for i in range(n)
    ]


def test_users_are_scoped_to_the_directory_and_paged(admin_client: Client, directory_a, directory_b) -> None:  # noqa: ANN001
    mine = _users(directory_a, 5)
    _users(directory_b, 2)
    data = _ok(admin_client.get(f"{BASE}/directories/{directory_a.id}/users"))
    assert [u["id"] for u in data] == [str(u.id) for u in mine]
    page = _ok(admin_client.get(f"{BASE}/directories/{directory_a.id}/users?pageOffset=1&pageLimit=2"))
    assert [u["id"] for u in page] == [str(u.id) for u in mine[1:3]]
    assert _ok(admin_client.get(f"{BASE}/directories/{directory_a.id}/users?pageLimit=5000")).__len__() == 5
    assert _ok(admin_client.get(f"{BASE}/directories/{directory_a.id}/users?pageOffset=9223372036854775807")) == []
    # Beyond 64 bits is refused, as on the REST API (core.apiinput), not silently capped.
    _err(admin_client.get(f"{BASE}/directories/{directory_a.id}/users?pageOffset=9223372036854775808"), 400)


@pytest.mark.parametrize("query", ["pageOffset=abc", "pageLimit=-1", "pageLimit=1.5", "pageOffset=%C2%B2"])
def test_non_numeric_paging_is_400(admin_client: Client, directory_a, query: str) -> None:  # noqa: ANN001
    _err(admin_client.get(f"{BASE}/directories/{directory_a.id}/users?{query}"), 400)
    _err(admin_client.get(f"{BASE}/audit?{query}"), 400)


def test_groups_are_scoped_to_the_directory(admin_client: Client, directory_a, directory_b) -> None:  # noqa: ANN001
    g = DirectoryGroup.objects.create(directory=directory_a, display_name="Eng", display_name_key="eng", raw={})
    DirectoryGroup.objects.create(directory=directory_b, display_name="Ops", display_name_key="ops", raw={})
    stamp = iso_utc(g.created_at)
    assert _ok(admin_client.get(f"{BASE}/directories/{directory_a.id}/groups")) == [
        {"id": str(g.id), "name": "Eng", "raw": {}, "created_at": stamp, "updated_at": iso_utc(g.updated_at)}
    ]


def test_events_list_filters_failed(admin_client: Client, directory_a, directory_b) -> None:  # noqa: ANN001
    def delivery(directory: Directory, delivered: bool) -> WebhookDelivery:
        return WebhookDelivery.objects.create(
            directory=directory, event_id=uuid.uuid4(), event_type="user.created", payload="{}", delivered=delivered
        )

    ok_row, failed_row = delivery(directory_a, True), delivery(directory_a, False)
    delivery(directory_b, False)
    url = f"{BASE}/directories/{directory_a.id}/events"
    assert {d["id"] for d in _ok(admin_client.get(url))} == {str(ok_row.id), str(failed_row.id)}
    assert [d["id"] for d in _ok(admin_client.get(url + "?failed=true"))] == [str(failed_row.id)]
    assert [d["id"] for d in _ok(admin_client.get(url + "?failed=false"))] == [str(ok_row.id)]
    _err(admin_client.get(url + "?failed=maybe"), 400)


# --- tokens ------------------------------------------------------------------------------------------


def test_post_token_creates_another_token_for_the_caller(admin_session: AdminSession, admin_client: Client) -> None:
    import bcrypt

    data = _ok(admin_client.post(f"{BASE}/token"), 201)
    assert data["userId"] == admin_session.user_id
    assert data["disabled"] is False
    assert bcrypt.checkpw(data["token"].encode(), data["tokenBcrypt"].encode())
    new_client = Client(HTTP_AUTHORIZATION=f"id={data['id']} token={data['token']} admin_token={ROOT}")
    assert new_client.get(f"{BASE}/users").status_code == 200
    entry = _only_new_entry(data["token"], data["tokenBcrypt"])
    assert entry.action == "token.created" and entry.target_id == data["id"]


def test_patch_token_disables_it_at_once(admin_client: Client, root) -> None:  # noqa: ANN001
    other = login("other@example.com").json()
    token_id = other["adminToken"]["id"]
    other_client = Client(HTTP_AUTHORIZATION=f"id={token_id} token={other['adminToken']['token']} admin_token={ROOT}")
    assert other_client.get(f"{BASE}/users").status_code == 200
    AuditEntry.objects.exclude(action="admin.login").delete()
    data = _ok(_json(admin_client, "patch", f"/token/{token_id}", {"disabled": True}))
    assert data["disabled"] is True and "token" not in data
    assert AdminToken.objects.get(pk=token_id).disabled
    _err(other_client.get(f"{BASE}/users"), 401)
    _err(Client(HTTP_AUTHORIZATION=f"Bearer {other['token']}").get(f"{BASE}/users"), 401)
    assert _only_new_entry(other["adminToken"]["token"]).action == "token.disabled"
    # Disabling again changes nothing and records nothing.
    _ok(_json(admin_client, "patch", f"/token/{token_id}", {"disabled": True}))
    assert len(_actions()) == 1


@pytest.mark.parametrize("body", [{"disabled": False}, {}, {"disabled": "true"}, {"disabled": True, "x": 1}, [1]])
def test_patch_token_with_bad_body_is_400(admin_session: AdminSession, admin_client: Client, body) -> None:  # noqa: ANN001
    _err(_json(admin_client, "patch", f"/token/{admin_session.body['adminToken']['id']}", body), 400)
    assert not AdminToken.objects.filter(disabled=True).exists()


def test_patch_unknown_token_is_404(admin_client: Client) -> None:
    _err(_json(admin_client, "patch", f"/token/{uuid.uuid4()}", {"disabled": True}), 404)
    _err(_json(admin_client, "patch", "/token/garbage", {"disabled": True}), 404)


# --- admin users -------------------------------------------------------------------------------------


def test_users_lists_admins(admin_session: AdminSession, admin_client: Client, root) -> None:  # noqa: ANN001
    login("second@example.com")
    data = _ok(admin_client.get(f"{BASE}/users"))
    assert [u["email"] for u in data] == ["ops@example.com", "second@example.com"]
    assert data[0]["id"] == admin_session.user_id and data[0]["timezone"] == "UTC"
    assert [u["email"] for u in _ok(admin_client.get(f"{BASE}/users?pageOffset=1"))] == ["second@example.com"]


def test_put_user_sets_an_iana_timezone(admin_session: AdminSession, admin_client: Client) -> None:
    data = _ok(_json(admin_client, "put", f"/user/{admin_session.user_id}", {"timezone": "Europe/Paris"}))
    assert data["timezone"] == "Europe/Paris"
    assert AdminUser.objects.get(pk=admin_session.user_id).timezone == "Europe/Paris"
    entry = _only_new_entry()
    assert entry.action == "admin.timezone_updated"
    assert entry.details["to"] == "Europe/Paris"


@pytest.mark.parametrize(
    "tz", ["Mars/Olympus", "", None, 5, "../../etc/passwd", "/etc/localtime", "Europe/Paris\x00", "europe/paris "]
)
def test_put_user_rejects_a_non_iana_timezone(admin_session: AdminSession, admin_client: Client, tz) -> None:  # noqa: ANN001
    _err(_json(admin_client, "put", f"/user/{admin_session.user_id}", {"timezone": tz}), 400)
    assert AdminUser.objects.get(pk=admin_session.user_id).timezone == "UTC"
    assert not _actions()


def test_put_unknown_user_is_404(admin_client: Client) -> None:
    _err(_json(admin_client, "put", f"/user/{uuid.uuid4()}", {"timezone": "UTC"}), 404)


# --- audit trail -------------------------------------------------------------------------------------


def test_audit_lists_newest_first_with_filters(
    admin_session: AdminSession, admin_client: Client, hooked: dict, root
) -> None:  # noqa: ANN001
    other = login("other@example.com").json()
    other_client = Client(HTTP_AUTHORIZATION=f"Bearer {other['token']}")
    _ok(other_client.post(f"{BASE}/directories/{hooked['id']}/scim-secret", content_type="application/json"))
    _ok(_json(admin_client, "patch", f"/directories/{hooked['id']}", {"name": "Renamed"}))

    data = _ok(admin_client.get(f"{BASE}/audit"))
    assert [e["action"] for e in data[:3]] == ["directory.updated", "directory.scim_secret_rotated", "admin.login"]
    first = data[0]
    assert set(first) == {"id", "createdAt", "actor", "action", "target", "directoryId", "clientIp", "details"}
    assert first["actor"] == {"id": admin_session.user_id, "email": "ops@example.com"}
    assert first["target"] == {"type": "directory", "id": hooked["id"]}
    assert first["clientIp"] == "127.0.0.1"

    by_actor = _ok(admin_client.get(f"{BASE}/audit?actor=other@example.com"))
    assert [e["action"] for e in by_actor] == ["directory.scim_secret_rotated", "admin.login"]
    assert _ok(admin_client.get(f"{BASE}/audit?actor={other['user']['id']}")) == by_actor
    assert [e["action"] for e in _ok(admin_client.get(f"{BASE}/audit?action=directory.updated"))] == [
        "directory.updated"
    ]
    assert len(_ok(admin_client.get(f"{BASE}/audit?directory={hooked['id']}"))) == 2
    assert len(_ok(admin_client.get(f"{BASE}/audit?pageLimit=1"))) == 1
    _err(admin_client.get(f"{BASE}/audit?directory=nope"), 400)


def test_audit_keeps_entries_of_a_deleted_directory(admin_client: Client, hooked: dict) -> None:
    admin_client.delete(f"{BASE}/directories/{hooked['id']}")
    assert [e["action"] for e in _ok(admin_client.get(f"{BASE}/audit?directory={hooked['id']}"))] == [
        "directory.deleted"
    ]
