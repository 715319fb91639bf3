"""scim.writes: the write handlers. What a write request can get wrong is refused before anything is
written: a 400 leaves the rows and the outbox as they were."""

from __future__ import annotations

import pytest

from tests.scim.conftest import PATCH_URN, Scim, assert_scim_error, group_body, rows_of, user_body

pytestmark = pytest.mark.django_db(transaction=True)

TOO_MANY_NAMES = "?attributes=" + ",".join(["title"] * 300)  # past scim.resources.MAX_ATTRIBUTE_NAMES


def test_a_write_with_an_attributes_list_it_cannot_take_is_a_400_that_writes_nothing(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("kept@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Kept"))
    before = rows_of(scim_hooked.directory)
    rename = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "displayName", "value": "New"}]}
    for method, path, body in (
        ("POST", "/Users", user_body("new@x.io")),
        ("PUT", f"/Users/{user['id']}", user_body("kept@x.io", title="changed")),
        (
            "PATCH",
            f"/Users/{user['id']}",
            {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "title", "value": "x"}]},
        ),
        ("POST", "/Groups", group_body("New")),
        ("PUT", f"/Groups/{group['id']}", group_body("Renamed")),
        ("PATCH", f"/Groups/{group['id']}", rename),
    ):
        assert_scim_error(*scim_hooked.call(method, path + TOO_MANY_NAMES, body), 400, "invalidValue")
    assert rows_of(scim_hooked.directory) == before


def test_a_write_answers_the_attributes_it_was_asked_for(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users?attributes=userName", user_body("ann@x.io", title="Boss"))
    assert status == 201 and user["userName"] == "ann@x.io" and "title" not in user
    status, patched = scim_a.patch(
        f"/Users/{user['id']}?excludedAttributes=title",
        {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "title", "value": "Chief"}]},
    )
    assert status == 200 and "title" not in patched and patched["userName"] == "ann@x.io"
