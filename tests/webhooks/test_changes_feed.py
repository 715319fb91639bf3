"""GET /api/v1/directory-sync/<id>/changes (contract §5.1): paging by sequence, bad input, 401/404, the
gap-free run, 410 past retention, the document, and the Directory's `events`. The read side is tested on
numbered rows written as the write side stores them (tests/webhooks/feedrows.py)."""

from __future__ import annotations

import uuid

import orjson
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from directories.models import Directory
from directories.services import directory_create, directory_delete
from tests.actors import TEST_ACTOR
from tests.webhooks.feedrows import ISO_MS, expired, feed_url, numbered, sequences
from webhooks.models import EventSequence, EventState, WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_drain_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here is delivered; the after-commit kick would only start drains in other threads."""
    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)


@pytest.fixture
def admin_client(db: None) -> Client:
    from adminauth.services import admin_login_record

    _, _, _, jwt_token = admin_login_record(email="ops@example.com", actor=TEST_ACTOR)
    return Client(HTTP_AUTHORIZATION=f"Bearer {jwt_token}")


# --- authentication and the directory -------------------------------------------------------------


def test_without_or_with_a_wrong_key_is_401(directory_a: Directory) -> None:
    for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer nope"), Client(HTTP_AUTHORIZATION="Bearer ")):
        response = client.get(feed_url(directory_a))
        assert response.status_code == 401
        assert response.json()["data"] is None and response.json()["error"]["code"] == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="roster"'


def test_the_scim_secret_is_not_an_api_key(directory_a: Directory, scim_client_a: Client) -> None:
    assert scim_client_a.get(feed_url(directory_a)).status_code == 401


@pytest.mark.parametrize("directory_id", [str(uuid.uuid4()), "not-a-uuid", "123"])
@pytest.mark.parametrize("alias", ["directory-sync", "dsync"])
def test_an_unknown_directory_is_404(api_client: Client, directory_id: str, alias: str) -> None:
    response = api_client.get(feed_url(directory_id, alias=alias))
    assert response.status_code == 404
    assert response.json() == {"data": None, "error": {"message": "Directory not found.", "code": 404}}


def test_a_deleted_directory_is_404_and_its_feed_goes_with_it(api_client: Client, directory_a: Directory) -> None:
    numbered(directory_a, [1, 2])
    directory_delete(actor=TEST_ACTOR, directory=directory_a)
    assert api_client.get(feed_url(directory_a)).status_code == 404
    assert not WebhookEvent.objects.filter(directory_id=directory_a.id, target="directory").exists()


# --- reading ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alias", ["directory-sync", "dsync"])
def test_pages_by_sequence_from_after_with_limit(
    api_client: Client, directory_a: Directory, directory_b: Directory, alias: str
) -> None:
    numbered(directory_a, [1, 2, 3, 4, 5])
    numbered(directory_b, [1, 2, 3, 4, 5, 6, 7])  # another directory's feed never shows up
    assert sequences(api_client.get(feed_url(directory_a, alias=alias))) == [1, 2, 3, 4, 5]
    assert sequences(api_client.get(feed_url(directory_a, "after=0&limit=2", alias))) == [1, 2]
    assert sequences(api_client.get(feed_url(directory_a, "after=2&limit=2", alias))) == [3, 4]
    assert sequences(api_client.get(feed_url(directory_a, "after=4&limit=2", alias))) == [5]
    assert sequences(api_client.get(feed_url(directory_a, "after=5", alias))) == []
    # After the head, even far past it: an empty page, not an error.
    assert sequences(api_client.get(feed_url(directory_a, "after=9223372036854775807", alias))) == []
    body = api_client.get(feed_url(directory_a, "after=1&limit=1", alias)).json()
    assert body["error"] is None
    assert body["events"] == {"last_sequence": 5, "oldest_sequence": 1}
    ids = {e.sequence: str(e.id) for e in WebhookEvent.objects.filter(directory_id=directory_a.id)}
    assert [item["id"] for item in body["data"]] == [ids[2]]


def test_an_item_is_the_exact_payload_with_its_delivery(api_client: Client, directory_a: Directory) -> None:
    delivered, failed = numbered(directory_a, [1], state=EventState.DELIVERED) + numbered(
        directory_a, [2], state=EventState.FAILED
    )
    (pending,) = numbered(directory_a, [3], state=EventState.PENDING)
    items = api_client.get(feed_url(directory_a)).json()["data"]
    for item, row in zip(items, (delivered, failed, pending), strict=True):
        delivery = item.pop("delivery")
        assert item.pop("deliveries") == []  # no webhook endpoint (contract §5.2)
        assert item == orjson.loads(row.body)  # same id, event, created_at, sequence, data
        assert list(item) == list(orjson.loads(row.body))  # and in the same order
        assert delivery["status"] == row.state
        assert delivery["attempts"] == row.attempts
        assert delivery["status_code"] == row.status_code
        if row.last_attempt_at is None:
            assert delivery["last_attempt_at"] is None
        else:
            assert ISO_MS.fullmatch(delivery["last_attempt_at"])
    assert [i["delivery"]["status"] for i in api_client.get(feed_url(directory_a)).json()["data"]] == [
        "delivered",
        "failed",
        "pending",
    ]


def test_limit_above_1000_is_served_as_1000(api_client: Client, directory_a: Directory) -> None:
    numbered(directory_a, list(range(1, 1006)))
    assert sequences(api_client.get(feed_url(directory_a, "limit=5000"))) == list(range(1, 1001))
    assert sequences(api_client.get(feed_url(directory_a, "after=1000&limit=1000"))) == list(range(1001, 1006))
    assert len(sequences(api_client.get(feed_url(directory_a)))) == 100  # the default


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("after=-1", "after"),
        ("after=abc", "after"),
        ("after=1.5", "after"),
        ("after=", "after"),
        ("after=+1", "after"),
        ("after=%201", "after"),
        ("after=1e3", "after"),
        ("after=%D9%A3", "after"),  # an Arabic-Indic digit: a digit, not 0-9
        ("after=9223372036854775808", "after"),  # 2**63: past 64 bits
        ("after=" + "9" * 5000, "after"),
        ("limit=0", "limit"),
        ("limit=-5", "limit"),
        ("limit=ten", "limit"),
        ("limit=", "limit"),
        ("limit=18446744073709551616", "limit"),
        ("after=1&limit=0", "limit"),
        ("after=%00", "after"),
    ],
)
def test_bad_after_or_limit_is_a_400_naming_it(
    api_client: Client, directory_a: Directory, query: str, name: str
) -> None:
    numbered(directory_a, [1, 2])
    response = api_client.get(feed_url(directory_a, query))
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["data"] is None and body["error"]["code"] == 400
    assert name in body["error"]["message"]


def test_a_read_stops_at_the_first_missing_number(api_client: Client, directory_a: Directory) -> None:
    """The reader's own guard: whatever the database holds, a page is the contiguous run from after+1."""
    numbered(directory_a, [1, 2, 4, 5], last=5)
    assert sequences(api_client.get(feed_url(directory_a))) == [1, 2]
    assert sequences(api_client.get(feed_url(directory_a, "after=2"))) == []  # 3 not visible: wait, not 410
    assert sequences(api_client.get(feed_url(directory_a, "after=3"))) == [4, 5]


def test_after_below_the_oldest_kept_minus_one_is_410_with_how_to_resynchronise(
    api_client: Client, directory_a: Directory
) -> None:
    numbered(directory_a, [5, 6, 7])  # 1 to 4 gone to retention
    for after in (0, 1, 3):
        message = expired(api_client.get(feed_url(directory_a, f"after={after}")))
        assert "resynchronise from the user and group lists" in message.lower()
        assert "events.last_sequence" in message
    assert sequences(api_client.get(feed_url(directory_a, "after=4"))) == [5, 6, 7]
    assert sequences(api_client.get(feed_url(directory_a, "after=6"))) == [7]


def test_with_every_event_purged_only_a_reader_at_the_head_is_served(
    api_client: Client, directory_a: Directory
) -> None:
    EventSequence.objects.create(directory_id=directory_a.id, last=7)
    expired(api_client.get(feed_url(directory_a, "after=6")))
    expired(api_client.get(feed_url(directory_a)))
    response = api_client.get(feed_url(directory_a, "after=7"))
    assert sequences(response) == []
    assert response.json()["events"] == {"last_sequence": 7, "oldest_sequence": None}


def test_a_directory_without_events_has_an_empty_feed(api_client: Client, directory_a: Directory) -> None:
    response = api_client.get(feed_url(directory_a))
    assert response.json() == {"data": [], "error": None, "events": {"last_sequence": 0, "oldest_sequence": None}}


def test_the_document_states_the_feed_route_its_bounds_and_shapes(api_client: Client) -> None:
    doc = api_client.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
        operation = doc["paths"][f"{prefix}/{{directory_id}}/changes"]["get"]
        parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
        assert parameters["after"] == {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
        assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
        assert set(operation["responses"]) == {"200", "400", "401", "404", "406", "410", "429", "500", "503"}
    schemas = doc["components"]["schemas"]
    assert set(schemas["ChangeListEnvelope"]["required"]) == {"data", "error", "events"}
    change = schemas["Change"]
    assert {"id", "event", "created_at", "sequence", "directory_id", "data", "delivery"} <= set(change["required"])
    assert "previous_attributes" in change["properties"]
    assert set(schemas["ChangeDelivery"]["required"]) == {"status", "attempts", "last_attempt_at", "status_code"}
    assert "events" in schemas["Directory"]["required"]
    assert schemas["EventsSummary"]["properties"]["oldest_sequence"]["nullable"] is True


# --- the Directory's `events` ---------------------------------------------------------------------


def test_the_directory_shows_its_events_on_every_surface(
    api_client: Client, directory_a: Directory, directory_b: Directory, admin_client: Client
) -> None:
    rest = f"/api/v1/directory-sync/{directory_a.id}"
    assert api_client.get(rest).json()["data"]["events"] == {"last_sequence": 0, "oldest_sequence": None}
    numbered(directory_a, [3, 4, 5])
    numbered(directory_b, [1])
    expected = {"last_sequence": 5, "oldest_sequence": 3}
    assert api_client.get(rest).json()["data"]["events"] == expected
    listed = api_client.get("/api/v1/directory-sync?tenant=acme&product=crm").json()["data"]
    assert [d["events"] for d in listed] == [expected]
    admin = "/auditlog/admin/v1/directories"
    assert admin_client.get(f"{admin}/{directory_a.id}").json()["data"]["events"] == expected
    by_id = {d["id"]: d["events"] for d in admin_client.get(admin).json()["data"]}
    assert by_id == {str(directory_a.id): expected, str(directory_b.id): {"last_sequence": 1, "oldest_sequence": 1}}


def test_the_directory_list_reads_every_events_summary_in_one_query(api_client: Client, db: None) -> None:
    url = "/api/v1/directory-sync?tenant=acme&product=crm"

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert api_client.get(url).status_code == 200
        return len(captured)

    directories = [
        directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": f"d{i}"}) for i in range(4)
    ]
    numbered(directories[0], [1, 2])
    one = queries()
    for i, directory in enumerate(directories[1:], start=1):
        numbered(directory, list(range(1, i + 2)))
    assert queries() == one
    assert [d["events"]["last_sequence"] for d in api_client.get(url).json()["data"]] == [2, 2, 3, 4]
