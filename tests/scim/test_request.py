"""scim.request.ScimRequest: the one request type of both HTTP entries and the embedding API."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from directories.models import Directory
from scim.request import ScimRequest
from scim.routes import scim_route
from tests.scim.conftest import Scim, user_body, wsgi_run


def test_the_repr_leaves_out_the_secret_the_query_and_the_body() -> None:
    request = ScimRequest.build(
        method="post",
        directory_id="d-1",
        resource_type="Users",
        resource_id="",
        query={"filter": 'userName eq "pii@x.io"'},
        body=b'{"userName": "pii@x.io"}',
        secret="s3cret-value",
        route=scim_route("Users", ""),
    )
    text = repr(request)
    assert "s3cret-value" not in text and "pii@x.io" not in text
    assert "method='POST'" in text and "resource_type='users'" in text and "resource_id=None" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.method = "GET"  # type: ignore[misc]


def _captured(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[ScimRequest]:
    """The requests `module` hands to the processor, which still answers them."""
    seen: list[ScimRequest] = []
    real = module.process

    def recording(request: ScimRequest, *args: Any, **kwargs: Any) -> Any:
        seen.append(request)
        return real(request, *args, **kwargs)  # the HTTP entry also passes what the processor should tell it

    monkeypatch.setattr(module, "process", recording)
    return seen


@pytest.mark.django_db(transaction=True)
def test_every_entry_builds_the_same_request(
    directory_a: Directory, scim_a: Scim, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scim.api
    import scim.http.views
    from config.wsgi import application

    over_http = _captured(monkeypatch, scim.http.views)
    embedded = _captured(monkeypatch, scim.api)
    body = orjson.dumps(user_body("same@x.io"))
    path = f"/api/scim/v2.0/{directory_a.id}/users/"
    auth = f"Bearer {directory_a.scim_secret}"
    status, _, _ = wsgi_run(application.scim, path, method="POST", body=body, query="count=2", HTTP_AUTHORIZATION=auth)
    assert status == "201 Created"
    assert scim_a.call("POST", "/users/?count=2", body)[0] == 409  # Django's view: the same request again
    scim.api.scim_request(
        {
            "method": "post",
            "directoryId": str(directory_a.id),
            "resourceType": "Users",
            "resourceId": "",
            "query": {"count": "2"},
            "body": body,
            "apiSecret": directory_a.scim_secret,
        }
    )
    expected = ScimRequest(
        method="POST",
        directory_id=str(directory_a.id),
        resource_type="users",
        resource_id=None,
        query={"count": "2"},
        body=body,
        secret=directory_a.scim_secret,
        route=scim_route("users", None),
    )
    assert expected.route is not None and expected.route.resource_type == "users"
    assert over_http == [expected, expected] and embedded == [expected]
