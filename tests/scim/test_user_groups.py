"""The read-only `groups` attribute of SCIM users (RFC 7643 §4.1.2)."""

from __future__ import annotations

from urllib.parse import quote

from django.db import connection
from django.test.utils import CaptureQueriesContext

from directories.models import DirectoryUser, GroupMembership
from tests.scim.conftest import Scim, group_body, user_body


def _setup(scim: Scim) -> tuple[dict, dict, dict]:
    _, ann = scim.post("/Users", user_body("ann@x.io"))
    _, eng = scim.post("/Groups", group_body("Engineering", [ann["id"]]))
    _, ops = scim.post("/Groups", group_body("Ops", [ann["id"]]))
    return ann, eng, ops


def test_a_user_lists_its_groups_in_the_order_it_joined(scim_a: Scim) -> None:
    ann, eng, ops = _setup(scim_a)
    status, body = scim_a.get(f"/Users/{ann['id']}")
    assert status == 200
    assert body["groups"] == [
        {"value": eng["id"], "display": "Engineering", "$ref": eng["meta"]["location"], "type": "direct"},
        {"value": ops["id"], "display": "Ops", "$ref": ops["meta"]["location"], "type": "direct"},
    ]
    for query in ("", "?filter=" + quote('userName eq "ann@x.io"'), "?sortBy=userName", "?filter=title%20eq%20null"):
        status, page = scim_a.get(f"/Users{query}")
        assert page["Resources"][0]["groups"] == body["groups"], query
    status, patched = scim_a.ops(f"/Users/{ann['id']}", {"op": "replace", "path": "title", "value": "x"})
    assert patched["groups"] == body["groups"]
    scim_a.ops(f"/Groups/{ops['id']}", {"op": "remove", "path": f'members[value eq "{ann["id"]}"]'})
    assert [g["display"] for g in scim_a.get(f"/Users/{ann['id']}")[1]["groups"]] == ["Engineering"]


def test_a_user_in_no_group_has_no_groups_attribute(scim_a: Scim) -> None:
    status, created = scim_a.post("/Users", user_body("solo@x.io"))
    assert status == 201 and "groups" not in created
    assert "groups" not in scim_a.get(f"/Users/{created['id']}")[1]


def test_excluded_attributes_groups_omits_it_without_reading_memberships(scim_a: Scim) -> None:
    ann, _, _ = _setup(scim_a)
    for path in (f"/Users/{ann['id']}?excludedAttributes=groups", "/Users?excludedAttributes=groups"):
        with CaptureQueriesContext(connection) as ctx:
            status, body = scim_a.get(path)
        assert status == 200 and "groups" not in str(body)
        assert not any("groupmembership" in q["sql"] for q in ctx.captured_queries), path
    body = scim_a.get(f"/Users/{ann['id']}?attributes=groups.display")[1]
    assert body["groups"] == [{"display": "Engineering"}, {"display": "Ops"}]


def test_groups_in_a_request_body_are_ignored(scim_a: Scim) -> None:
    ann, eng, _ = _setup(scim_a)
    body = user_body("ann@x.io", groups=[{"value": "00000000-0000-0000-0000-000000000000"}])
    status, replaced = scim_a.put(f"/Users/{ann['id']}", body)
    assert status == 200 and len(replaced["groups"]) == 2
    assert "groups" not in DirectoryUser.objects.get(pk=ann["id"]).raw
    assert GroupMembership.objects.filter(user_id=ann["id"]).count() == 2
    status, created = scim_a.post("/Users", user_body("new@x.io", groups=[{"value": eng["id"]}]))
    assert status == 201 and "groups" not in created
    assert not GroupMembership.objects.filter(user_id=created["id"]).exists()


def test_events_carry_custom_attributes_and_the_roles_after_the_change(scim_hooked: Scim) -> None:
    from tests.scim.test_users import _events

    directory = scim_hooked.directory
    directory.attribute_map = {"work_email": 'emails[type eq "work"].value'}
    directory.role_map = {"engineering": "dev", "Ops": "ops"}
    directory.save()
    _, ann = scim_hooked.post("/Users", user_body("ann@x.io"))
    _, eng = scim_hooked.post("/Groups", group_body("Engineering"))
    _, ops = scim_hooked.post("/Groups", group_body("Ops", [ann["id"]]))
    scim_hooked.ops(f"/Groups/{eng['id']}", {"op": "add", "path": "members", "value": [{"value": ann["id"]}]})
    scim_hooked.ops(f"/Users/{ann['id']}", {"op": "replace", "path": "title", "value": "Lead"})
    scim_hooked.ops(f"/Groups/{ops['id']}", {"op": "remove", "path": f'members[value eq "{ann["id"]}"]'})
    scim_hooked.delete(f"/Users/{ann['id']}")
    seen = [(e["event"], e["data"].get("roles")) for e in _events(directory) if "roles" in e["data"]]
    assert seen == [
        ("user.created", []),
        ("group.user_added", ["ops"]),
        ("group.user_added", ["dev", "ops"]),
        ("user.updated", ["dev", "ops"]),
        ("group.user_removed", ["dev"]),
        ("user.deleted", ["dev"]),
    ]
    created = next(e for e in _events(directory) if e["event"] == "user.created")
    assert created["data"]["custom_attributes"] == {"work_email": "ann@x.io"}
