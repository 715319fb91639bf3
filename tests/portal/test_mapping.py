"""The portal's mapping page: edit a directory's attribute and role maps, preview one user, audited save."""

from __future__ import annotations

import json

from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from tests.portal.conftest import make_group, make_user

ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"


def _url(directory: Directory) -> str:
    return f"/portal/directories/{directory.id}/mapping"


def _post(client: Client, directory: Directory, action: str, attribute_map: object, role_map: object, user: str = ""):  # noqa: ANN202
    data = {
        "attribute_map": json.dumps(attribute_map),
        "role_map": json.dumps(role_map),
        "preview_user": user,
        "action": action,
    }
    return client.post(_url(directory), data)


def test_preview_shows_what_the_typed_maps_give_a_user_without_saving(
    portal_client: Client, directory_a: Directory
) -> None:
    ann = make_user(directory_a, "ann@x.io", raw={ENTERPRISE: {"department": "R&D"}})
    make_group(directory_a, "Engineering", [ann])
    attribute_map = {"department": f"{ENTERPRISE}:department"}
    response = _post(portal_client, directory_a, "preview", attribute_map, {"engineering": "dev"}, "ANN@x.io")
    assert response.status_code == 200
    page = response.content.decode()
    assert "R&amp;D" in page and ">dev<" in page and "Engineering" in page
    directory_a.refresh_from_db()
    assert directory_a.attribute_map == {} and directory_a.role_map == {}
    response = _post(portal_client, directory_a, "preview", attribute_map, {}, str(ann.id))
    assert response.status_code == 200 and "R&amp;D" in response.content.decode()


def test_save_goes_through_the_audited_service_and_bad_maps_save_nothing(
    portal_client: Client, directory_a: Directory
) -> None:
    response = _post(portal_client, directory_a, "save", {"email": "title"}, {"Eng": "dev"})
    assert response.status_code == 400 and "User field" in response.content.decode()
    assert Directory.objects.get(pk=directory_a.pk).role_map == {}
    assert _post(portal_client, directory_a, "save", {}, ["not", "an", "object"]).status_code == 400
    response = portal_client.post(_url(directory_a), {"attribute_map": "{nope", "role_map": "", "action": "save"})
    assert response.status_code == 400 and "not valid JSON" in response.content.decode()
    response = _post(portal_client, directory_a, "save", {"title": "title"}, {"Eng": "dev"})
    assert response.status_code == 302
    saved = Directory.objects.get(pk=directory_a.pk)
    assert saved.attribute_map == {"title": "title"} and saved.role_map == {"Eng": "dev"}
    entry = AuditEntry.objects.filter(directory_id=directory_a.id).latest("id")
    assert entry.action == "directory.updated" and set(entry.details["fields"]) == {"attribute_map", "role_map"}
    assert "Eng" in portal_client.get(_url(directory_a)).content.decode()


def test_preview_of_an_unknown_user_is_an_error_on_the_field(portal_client: Client, directory_a: Directory) -> None:
    response = _post(portal_client, directory_a, "preview", {}, {}, "nobody@x.io")
    assert response.status_code == 400 and "No user of this directory" in response.content.decode()


def test_the_mapping_page_needs_a_signed_in_admin(directory_a: Directory) -> None:
    response = Client().get(_url(directory_a))
    assert response.status_code == 302 and "/portal/login" in response["Location"]
    assert Client().post(_url(directory_a), {"action": "save"}).status_code in (302, 403)
    assert Directory.objects.get(pk=directory_a.pk).attribute_map == {}
