"""scim2-tester against a live Roster (a real HTTP server started by pytest-django's live_server).

Zero failures are expected, except checks for features /ServiceProviderConfig truthfully reports as
unsupported (listed in README, section SCIM); none are currently skipped for that reason.

scim2-tester 0.5.2 (the latest) checks `.search` but has no checks for sort and etag, which
/ServiceProviderConfig now advertises; the second test exercises them through the same client
(scim2-client's SearchRequest, its models' parsing of meta.version) over the same live server.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from scim2_client import BaseSyncSCIMClient
from scim2_client.engines.inprocess import _stays_under_base_url
from scim2_models import ListResponse, ScimProvider, SearchRequest, ServiceProviderConfig, User
from scim2_tester import Status, check_server

from directories.services import directory_create
from tests.actors import TEST_ACTOR

FAILING = {Status.ERROR, Status.CRITICAL}


class RequestsSCIMClient(BaseSyncSCIMClient):
    """scim2-client over `requests` (its own network engine needs httpx2, which Roster does not ship)."""

    def __init__(self, base_url: str, token: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.headers["Authorization"] = f"Bearer {token}"

    def _stays_under_base_url(self, endpoint: str) -> bool:
        return _stays_under_base_url(self.base_url, endpoint)

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        if not url.startswith("http"):
            url = self.base_url + "/" + url.lstrip("/")
        headers = {"Content-Type": "application/scim+json", **(kwargs.pop("headers", None) or {})}
        return self.session.request(method, url, headers=headers, timeout=30, **kwargs)


@pytest.fixture
def live_directory(transactional_db):  # noqa: ANN001, ANN201
    return directory_create(actor=TEST_ACTOR, data={"tenant": "tester", "product": "crm", "type": "generic-scim-v2"})


def test_scim2_tester_finds_no_failures(live_server, live_directory) -> None:  # noqa: ANN001
    client = RequestsSCIMClient(
        f"{live_server.url}/api/scim/v2.0/{live_directory.id}",
        live_directory.scim_secret,
        provider=ScimProvider(),
    )
    results = check_server(client)
    failures = [r for r in results if r.status in FAILING]
    assert len(results) > 40, results
    assert not failures, "\n".join(repr(r) for r in failures)


def test_sort_etag_and_search_work_through_scim2_client(live_server, live_directory) -> None:  # noqa: ANN001
    base = f"{live_server.url}/api/scim/v2.0/{live_directory.id}"
    client = RequestsSCIMClient(base, live_directory.scim_secret, provider=ScimProvider())
    client.discover()
    config = client.query(ServiceProviderConfig)
    assert config.sort.supported is True and config.etag.supported is True
    for name in ("carol@x.io", "alice@x.io", "bob@x.io"):
        client.create(User(user_name=name))
    descending = SearchRequest(sort_by="userName", sort_order=SearchRequest.SortOrder.descending)
    listed = client.query(User, query_parameters=descending)
    assert isinstance(listed, ListResponse)
    assert [u.user_name for u in listed.resources] == ["carol@x.io", "bob@x.io", "alice@x.io"]
    searched = client.search(search_request=SearchRequest(sort_by="userName", count=2))
    assert [r.user_name for r in searched.resources] == ["alice@x.io", "bob@x.io"]
    alice = listed.resources[-1]
    response = client.session.get(f"{base}/Users/{alice.id}")
    assert response.headers["ETag"] == alice.meta.version == response.json()["meta"]["version"]
    assert (
        client.session.get(f"{base}/Users/{alice.id}", headers={"If-None-Match": alice.meta.version}).status_code == 304
    )
    stale = client.session.delete(f"{base}/Users/{alice.id}", headers={"If-Match": 'W/"0"'})
    assert stale.status_code == 412 and stale.json()["status"] == "412"
    assert (
        client.session.delete(f"{base}/Users/{alice.id}", headers={"If-Match": alice.meta.version}).status_code == 204
    )
