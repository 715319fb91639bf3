"""The embedding API: scim_request({method, body, directoryId, resourceId, resourceType, apiSecret, query})."""

from __future__ import annotations

from django.db import transaction

from directories.models import Directory, DirectoryUser
from scim.api import scim_request


def _req(directory: Directory, **fields) -> dict:  # noqa: ANN003
    return {"directoryId": str(directory.id), "apiSecret": directory.scim_secret, **fields}


def test_create_list_and_callback_events(directory_a: Directory, django_capture_on_commit_callbacks) -> None:  # noqa: ANN001
    seen: list[dict] = []
    # An embedding caller's own transaction: the callback waits for its commit.
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        result = scim_request(
            _req(
                directory_a,
                method="POST",
                resourceType="users",
                body={"userName": "emb@x.io", "name": {"givenName": "E"}},
            ),
            callback=seen.append,
        )
        assert seen == []  # called after commit, not inside the transaction
    assert result["status"] == 201 and result["data"]["userName"] == "emb@x.io"
    assert [e["event"] for e in seen] == ["user.created"]
    assert seen[0]["data"]["id"] == result["data"]["id"] and seen[0]["directory_id"] == str(directory_a.id)
    listed = scim_request(
        _req(
            directory_a,
            method="GET",
            resourceType="users",
            query={"filter": 'userName eq "EMB@x.io"', "count": 5, "startIndex": 1},
        )
    )
    assert listed["status"] == 200 and listed["data"]["totalResults"] == 1


def test_string_body_is_parsed_and_bad_json_is_400(directory_a: Directory) -> None:
    ok = scim_request(_req(directory_a, method="POST", resourceType="users", body='{"userName": "s@x.io"}'))
    assert ok["status"] == 201
    bad = scim_request(_req(directory_a, method="POST", resourceType="users", body="{nope"))
    assert bad["status"] == 400 and bad["data"]["scimType"] == "invalidSyntax"


def test_wrong_secret_is_401_and_no_callback(directory_a: Directory, directory_b: Directory) -> None:
    seen: list[dict] = []
    result = scim_request(
        {
            "method": "POST",
            "resourceType": "users",
            "directoryId": str(directory_a.id),
            "apiSecret": directory_b.scim_secret,
            "body": {"userName": "x"},
        },
        callback=seen.append,
    )
    assert result["status"] == 401 and result["data"]["status"] == "401"
    assert seen == [] and not DirectoryUser.objects.exists()


def test_patch_and_delete_through_embedding(directory_a: Directory, django_capture_on_commit_callbacks) -> None:  # noqa: ANN001
    seen: list[dict] = []
    uid = scim_request(_req(directory_a, method="POST", resourceType="users", body={"userName": "d@x.io"}))["data"][
        "id"
    ]
    patch = {"Operations": [{"op": "replace", "value": {"active": False}}]}
    # An embedding caller's own transaction: the callback waits for its commit.
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        result = scim_request(
            _req(directory_a, method="PATCH", resourceType="users", resourceId=uid, body=patch), seen.append
        )
        assert result["status"] == 200 and result["data"]["active"] is False
        result = scim_request(_req(directory_a, method="DELETE", resourceType="users", resourceId=uid), seen.append)
    assert result == {"status": 204, "data": None}
    assert [e["event"] for e in seen] == ["user.updated", "user.deleted"]
    assert scim_request(_req(directory_a, method="GET", resourceType="users", resourceId=uid))["status"] == 404


def test_unknown_resource_type_is_404_and_bad_query_is_400(directory_a: Directory) -> None:
    assert scim_request(_req(directory_a, method="GET", resourceType="widgets"))["status"] == 404
    assert scim_request(_req(directory_a, method="GET", resourceType="users", query={"count": "many"}))["status"] == 400
    assert scim_request("not a dict")["status"] == 400  # type: ignore[arg-type]
