"""scim.routes: the one route table. What exists (404), which methods (405 and `Allow`), whether the
body is read, and which handler answers all come from one lookup per request."""

from __future__ import annotations

from typing import Any

import pytest

from directories.models import Directory, DirectoryUser
from scim.api import scim_request
from scim.routes import COLLECTION, ID, ROUTES, SEARCH, scim_route
from tests.scim.conftest import Scim, assert_scim_error, user_body

pytestmark = pytest.mark.django_db

# What the contract's route list says (§4): path under the directory → the methods it takes.
CONTRACT = {
    "/Users": "GET, POST",
    "/Users/some-id": "GET, PUT, PATCH, DELETE",
    "/Users/.search": "POST",
    "/Groups": "GET, POST",
    "/Groups/some-id": "GET, PUT, PATCH, DELETE",
    "/Groups/.search": "POST",
    "/.search": "POST",
    "/ServiceProviderConfig": "GET",
    "/ServiceProviderConfigs": "GET",
    "/ResourceTypes": "GET",
    "/ResourceTypes/User": "GET",
    "/Schemas": "GET",
}
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _route_of(path: str) -> Any:
    _, resource, *rest = path.split("/", 2)
    return scim_route(resource, rest[0] if rest else None)


def test_the_table_takes_the_methods_the_contract_lists() -> None:
    for path, allow in CONTRACT.items():
        route = _route_of(path)
        assert route is not None and route.allow == allow and ", ".join(route.methods) == allow, path


def test_exactly_the_methods_that_send_a_document_take_a_body() -> None:
    for route in ROUTES.values():
        for method, target in route.methods.items():
            assert target.body is (method in ("POST", "PUT", "PATCH")), (route.resource_type, method)


def test_resource_names_are_case_insensitive_and_ids_have_three_shapes() -> None:
    assert scim_route("USERS", None) is scim_route("users", "") is ROUTES[("users", COLLECTION)]
    assert scim_route("Users", ".SEARCH") is ROUTES[("users", SEARCH)]
    assert scim_route("Users", "2819c223") is ROUTES[("users", ID)]
    assert scim_route("ServiceProviderConfigs", None) is scim_route("serviceproviderconfig", None)
    for name in ("", None, "Nothing", "Users/x", 7):
        assert scim_route(name, None) is None, name


@pytest.mark.parametrize("path", list(CONTRACT))
def test_every_method_a_route_lacks_is_a_405_with_the_routes_allow(scim_a: Scim, path: str) -> None:
    allow = CONTRACT[path]
    for method in METHODS:
        if method in allow.split(", "):
            continue
        status, body = scim_a.call(method, path, user_body() if method in ("POST", "PUT", "PATCH") else None)
        assert_scim_error(status, body, 405)
        assert scim_a.last["Allow"] == allow, (method, path)


def test_an_unknown_resource_is_a_404_once_authenticated_and_a_401_before(scim_a: Scim) -> None:
    assert_scim_error(*scim_a.get("/Nothing"), 404)
    assert_scim_error(*scim_a.post("/Nothing", user_body()), 404)
    assert_scim_error(*Scim(scim_a.directory, secret="wrong").get("/Nothing"), 401)


def test_a_method_without_a_body_never_reads_one(scim_a: Scim) -> None:
    """A DELETE or GET carrying a body that is not JSON, in a type SCIM does not take, is answered as if it
    had none: the body is never read, so neither 400 nor 415."""
    _, user = scim_a.post("/Users", user_body("ann@x.io"))
    url = f"{scim_a.base}/Users/{user['id']}"
    for method, status in (("GET", 200), ("DELETE", 204)):
        assert scim_a.client.generic(method, url, b"\x00not json", content_type="text/plain").status_code == status
    assert not DirectoryUser.objects.filter(id=user["id"]).exists()


def test_the_route_is_looked_up_once_per_request(
    scim_a: Scim, directory_a: Directory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scim.api
    import scim.http.views

    calls: list[tuple[Any, Any]] = []

    def counting(resource_type: Any, resource_id: Any) -> Any:
        calls.append((resource_type, resource_id))
        return scim_route(resource_type, resource_id)

    monkeypatch.setattr(scim.http.views, "scim_route", counting)
    monkeypatch.setattr(scim.api, "scim_route", counting)
    assert scim_a.post("/Users", user_body("one@x.io"))[0] == 201
    assert scim_a.call("PUT", "/Users", user_body("two@x.io"))[0] == 405
    assert scim_a.get("/Nothing")[0] == 404
    request = {"method": "GET", "directoryId": str(directory_a.id), "apiSecret": directory_a.scim_secret}
    assert scim_request({**request, "resourceType": "users"})["status"] == 200
    assert calls == [("Users", ""), ("Users", ""), ("Nothing", ""), ("users", None)]


def test_the_embedding_api_takes_the_names_the_urls_take(directory_a: Directory) -> None:
    request = {"method": "GET", "directoryId": str(directory_a.id), "apiSecret": directory_a.scim_secret}
    for name in ("ServiceProviderConfig", "serviceproviderconfigs"):
        result = scim_request({**request, "resourceType": name})
        assert result["status"] == 200 and "patch" in result["data"], name
    assert scim_request({**request, "resourceType": "Nothing"})["status"] == 404
    assert scim_request({**request, "resourceType": "users", "method": "PUT"})["status"] == 405
