"""GET /api/v1/directory-sync/<id>/changes (contract §5.1): paging by sequence, bad input, 401/404, the
gap-free run, 410 past retention, the Directory's `events`, and the feed retention of the purge.

The read side is tested on numbered rows written here (`_numbered`), the whole path (SCIM write, the
numbering, the drain's outcome) through the SCIM endpoint in the tests at the end.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import orjson
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.timefmt import iso_utc
from directories.models import Directory
from directories.services import directory_create, directory_delete
from tests.webhooks.conftest import Receiver, make_hooked_directory
from webhooks.models import EventSequence, EventState, WebhookDelivery, WebhookEvent
from webhooks.services import deliveries_purge, events_batch_deliver
from webhooks.services.sweeping import feed_purge

pytestmark = pytest.mark.django_db

ISO_MS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
SCIM_CT = "application/scim+json"


@pytest.fixture(autouse=True)
def _no_drain_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Delivery is driven by the tests (events_batch_deliver), not by the after-commit kick."""
    from webhooks import dispatch

    monkeypatch.setattr(dispatch, "kick", lambda directory_id, target: None)


@pytest.fixture
def admin_client(db: None) -> Client:
    from adminauth.services import admin_login_record

    _, _, _, jwt_token = admin_login_record(email="ops@example.com", client_ip=None)
    return Client(HTTP_AUTHORIZATION=f"Bearer {jwt_token}")


def _numbered(
    directory: Directory,
    sequences: list[int],
    *,
    state: str = EventState.DELIVERED,
    created_at: datetime | None = None,
    last: int | None = None,
) -> list[WebhookEvent]:
    """Events of `directory` with these numbers, as the write side stores them (body with "sequence"
    after "created_at"), and the directory's counter at `last` (default: the largest number)."""
    moment = created_at or timezone.now()
    rows = []
    for sequence in sequences:
        event_id = uuid.uuid4()
        payload = {
            "id": str(event_id),
            "event": "user.created",
            "created_at": iso_utc(moment),
            "sequence": sequence,
            "directory_id": str(directory.id),
            "tenant": directory.tenant,
            "product": directory.product,
            "data": {"id": f"user-{sequence}", "first_name": "Ann"},
        }
        finished = state in (EventState.DELIVERED, EventState.FAILED, EventState.DROPPED)
        rows.append(
            WebhookEvent(
                id=event_id,
                directory_id=directory.id,
                event_type="user.created",
                target="directory",
                body=orjson.dumps(payload).decode(),
                state=state,
                created_at=moment + timedelta(microseconds=sequence),
                finished_at=moment if finished else None,
                sequence=sequence,
                attempts=1 if state in (EventState.DELIVERED, EventState.FAILED) else 0,
                last_attempt_at=moment if state in (EventState.DELIVERED, EventState.FAILED) else None,
                status_code={EventState.DELIVERED: 200, EventState.FAILED: 500}.get(state),
            )
        )
    WebhookEvent.objects.bulk_create(rows)
    top = last if last is not None else max(sequences, default=0)
    EventSequence.objects.update_or_create(directory_id=directory.id, defaults={"last": top})
    return rows


def _url(directory: Directory | str, query: str = "", alias: str = "directory-sync") -> str:
    directory_id = directory.id if isinstance(directory, Directory) else directory
    return f"/api/v1/{alias}/{directory_id}/changes" + (f"?{query}" if query else "")


def _sequences(response: Any) -> list[int]:
    assert response.status_code == 200, response.content
    return [item["sequence"] for item in response.json()["data"]]


# --- authentication and the directory -------------------------------------------------------------


def test_without_or_with_a_wrong_key_is_401(directory_a: Directory) -> None:
    for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer nope"), Client(HTTP_AUTHORIZATION="Bearer ")):
        response = client.get(_url(directory_a))
        assert response.status_code == 401
        assert response.json()["data"] is None and response.json()["error"]["code"] == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="roster"'


def test_the_scim_secret_is_not_an_api_key(directory_a: Directory, scim_client_a: Client) -> None:
    assert scim_client_a.get(_url(directory_a)).status_code == 401


@pytest.mark.parametrize("directory_id", [str(uuid.uuid4()), "not-a-uuid", "123"])
@pytest.mark.parametrize("alias", ["directory-sync", "dsync"])
def test_an_unknown_directory_is_404(api_client: Client, directory_id: str, alias: str) -> None:
    response = api_client.get(_url(directory_id, alias=alias))
    assert response.status_code == 404
    assert response.json() == {"data": None, "error": {"message": "Directory not found.", "code": 404}}


def test_a_deleted_directory_is_404_and_its_counter_goes_with_it(api_client: Client, directory_a: Directory) -> None:
    _numbered(directory_a, [1, 2])
    directory_delete(directory=directory_a)
    assert api_client.get(_url(directory_a)).status_code == 404
    assert not EventSequence.objects.filter(directory_id=directory_a.id).exists()
    assert not WebhookEvent.objects.filter(directory_id=directory_a.id, target="directory").exists()


# --- reading ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alias", ["directory-sync", "dsync"])
def test_pages_by_sequence_from_after_with_limit(
    api_client: Client, directory_a: Directory, directory_b: Directory, alias: str
) -> None:
    _numbered(directory_a, [1, 2, 3, 4, 5])
    _numbered(directory_b, [1, 2, 3, 4, 5, 6, 7])  # another directory's feed never shows up
    assert _sequences(api_client.get(_url(directory_a, alias=alias))) == [1, 2, 3, 4, 5]
    assert _sequences(api_client.get(_url(directory_a, "after=0&limit=2", alias))) == [1, 2]
    assert _sequences(api_client.get(_url(directory_a, "after=2&limit=2", alias))) == [3, 4]
    assert _sequences(api_client.get(_url(directory_a, "after=4&limit=2", alias))) == [5]
    assert _sequences(api_client.get(_url(directory_a, "after=5", alias))) == []
    # After the head, even far past it: an empty page, not an error.
    assert _sequences(api_client.get(_url(directory_a, "after=9223372036854775807", alias))) == []
    body = api_client.get(_url(directory_a, "after=1&limit=1", alias)).json()
    assert body["error"] is None
    assert body["events"] == {"last_sequence": 5, "oldest_sequence": 1}
    ids = {e.sequence: str(e.id) for e in WebhookEvent.objects.filter(directory_id=directory_a.id)}
    assert [item["id"] for item in body["data"]] == [ids[2]]


def test_an_item_is_the_exact_payload_with_its_delivery(api_client: Client, directory_a: Directory) -> None:
    delivered, failed = _numbered(directory_a, [1], state=EventState.DELIVERED) + _numbered(
        directory_a, [2], state=EventState.FAILED
    )
    (pending,) = _numbered(directory_a, [3], state=EventState.PENDING)
    items = api_client.get(_url(directory_a)).json()["data"]
    for item, row in zip(items, (delivered, failed, pending), strict=True):
        delivery = item.pop("delivery")
        assert item == orjson.loads(row.body)  # same id, event, created_at, sequence, data
        assert list(item) == list(orjson.loads(row.body))  # and in the same order
        assert delivery["status"] == row.state
        assert delivery["attempts"] == row.attempts
        assert delivery["status_code"] == row.status_code
        if row.last_attempt_at is None:
            assert delivery["last_attempt_at"] is None
        else:
            assert ISO_MS.fullmatch(delivery["last_attempt_at"])
    assert [i["delivery"]["status"] for i in api_client.get(_url(directory_a)).json()["data"]] == [
        "delivered",
        "failed",
        "pending",
    ]


def test_limit_above_1000_is_served_as_1000(api_client: Client, directory_a: Directory) -> None:
    _numbered(directory_a, list(range(1, 1006)))
    assert _sequences(api_client.get(_url(directory_a, "limit=5000"))) == list(range(1, 1001))
    assert _sequences(api_client.get(_url(directory_a, "after=1000&limit=1000"))) == list(range(1001, 1006))
    assert len(_sequences(api_client.get(_url(directory_a)))) == 100  # the default


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
    _numbered(directory_a, [1, 2])
    response = api_client.get(_url(directory_a, query))
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["data"] is None and body["error"]["code"] == 400
    assert name in body["error"]["message"]


def test_a_read_stops_at_the_first_missing_number(api_client: Client, directory_a: Directory) -> None:
    """The reader's own guard: whatever the database holds, a page is the contiguous run from after+1."""
    _numbered(directory_a, [1, 2, 4, 5], last=5)
    assert _sequences(api_client.get(_url(directory_a))) == [1, 2]
    assert _sequences(api_client.get(_url(directory_a, "after=2"))) == []  # 3 not visible: wait, not 410
    assert _sequences(api_client.get(_url(directory_a, "after=3"))) == [4, 5]


def _expired(response: Any) -> str:
    assert response.status_code == 410, response.content
    body = response.json()
    assert body["data"] is None and body["error"]["code"] == 410
    return body["error"]["message"]


def test_after_below_the_oldest_kept_minus_one_is_410_with_how_to_resynchronise(
    api_client: Client, directory_a: Directory
) -> None:
    _numbered(directory_a, [5, 6, 7])  # 1 to 4 gone to retention
    for after in (0, 1, 3):
        message = _expired(api_client.get(_url(directory_a, f"after={after}")))
        assert "resynchronise from the user and group lists" in message.lower()
        assert "events.last_sequence" in message
    assert _sequences(api_client.get(_url(directory_a, "after=4"))) == [5, 6, 7]
    assert _sequences(api_client.get(_url(directory_a, "after=6"))) == [7]


def test_with_every_event_purged_only_a_reader_at_the_head_is_served(
    api_client: Client, directory_a: Directory
) -> None:
    EventSequence.objects.create(directory_id=directory_a.id, last=7)
    _expired(api_client.get(_url(directory_a, "after=6")))
    _expired(api_client.get(_url(directory_a)))
    response = api_client.get(_url(directory_a, "after=7"))
    assert _sequences(response) == []
    assert response.json()["events"] == {"last_sequence": 7, "oldest_sequence": None}


def test_a_directory_without_events_has_an_empty_feed(api_client: Client, directory_a: Directory) -> None:
    response = api_client.get(_url(directory_a))
    assert response.json() == {"data": [], "error": None, "events": {"last_sequence": 0, "oldest_sequence": None}}


def test_the_document_states_the_feed_route_its_bounds_and_shapes(api_client: Client) -> None:
    doc = api_client.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
        operation = doc["paths"][f"{prefix}/{{directory_id}}/changes"]["get"]
        parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
        assert parameters["after"] == {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
        assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
        assert set(operation["responses"]) == {"200", "400", "401", "404", "406", "410", "500", "503"}
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
    _numbered(directory_a, [3, 4, 5])
    _numbered(directory_b, [1])
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

    directories = [directory_create(data={"tenant": "acme", "product": "crm", "name": f"d{i}"}) for i in range(4)]
    _numbered(directories[0], [1, 2])
    one = queries()
    for i, directory in enumerate(directories[1:], start=1):
        _numbered(directory, list(range(1, i + 2)))
    assert queries() == one
    assert [d["events"]["last_sequence"] for d in api_client.get(url).json()["data"]] == [2, 2, 3, 4]


# --- retention -------------------------------------------------------------------------------------


def test_the_purge_deletes_old_finished_events_whatever_the_log_switch_and_keeps_the_counter(
    api_client: Client, hooked_directory: Directory, settings: Any
) -> None:
    settings.EVENT_RETENTION_DAYS = 30
    settings.WEBHOOK_LOG_RETENTION_DAYS = 7
    old = timezone.now() - timedelta(days=31)
    _numbered(hooked_directory, [1, 2], state=EventState.DELIVERED, created_at=old)
    _numbered(hooked_directory, [3], state=EventState.DROPPED, created_at=old)
    _numbered(hooked_directory, [4], state=EventState.FAILED, created_at=old)
    # Past the log's retention, within the feed's: kept.
    _numbered(hooked_directory, [5, 6], created_at=timezone.now() - timedelta(days=10))
    assert hooked_directory.log_webhook_events  # with the log on, the feed's rule still applies
    result = deliveries_purge()
    assert result.events == 4
    assert list(WebhookEvent.objects.order_by("sequence").values_list("sequence", flat=True)) == [5, 6]
    assert EventSequence.objects.get(directory_id=hooked_directory.id).last == 6
    _expired(api_client.get(_url(hooked_directory, "after=3")))
    assert _sequences(api_client.get(_url(hooked_directory, "after=4"))) == [5, 6]


def test_the_purge_never_deletes_a_pending_or_sending_event_nor_anything_after_it(directory_a: Directory) -> None:
    old = timezone.now() - timedelta(days=40)
    _numbered(directory_a, [1, 2], created_at=old)
    _numbered(directory_a, [3], state=EventState.PENDING, created_at=old)
    _numbered(directory_a, [4], created_at=old)
    _numbered(directory_a, [5], state=EventState.SENDING, created_at=old)
    _numbered(directory_a, [6], created_at=old)
    assert feed_purge(before=timezone.now() - timedelta(days=30)) == 2
    assert list(WebhookEvent.objects.order_by("sequence").values_list("sequence", flat=True)) == [3, 4, 5, 6]


def test_the_purge_deletes_only_a_prefix_when_commit_order_and_creation_order_differ(
    api_client: Client, directory_a: Directory
) -> None:
    """Event 2 was created after event 3 (its transaction started later and committed first): the
    purge stops before 2, so the feed never has a hole above its oldest kept number."""
    cutoff = timezone.now() - timedelta(days=30)
    _numbered(directory_a, [1], created_at=cutoff - timedelta(seconds=2))
    _numbered(directory_a, [2], created_at=cutoff + timedelta(seconds=1))
    _numbered(directory_a, [3], created_at=cutoff - timedelta(seconds=1))
    assert feed_purge(before=cutoff) == 1
    assert _sequences(api_client.get(_url(directory_a, "after=1"))) == [2, 3]


def test_the_purge_keeps_dsync_events_on_the_log_retention(directory_a: Directory, settings: Any) -> None:
    settings.WEBHOOK_LOG_RETENTION_DAYS = 7
    settings.EVENT_RETENTION_DAYS = 30
    moment = timezone.now() - timedelta(days=8)
    WebhookEvent.objects.create(
        directory_id=directory_a.id,
        event_type="dsync.created",
        target="global",
        body="{}",
        state=EventState.DELIVERED,
        created_at=moment,
        finished_at=moment,
    )
    assert deliveries_purge().events == 1
    assert not WebhookEvent.objects.exists()


# --- the whole path: SCIM writes, numbering, delivery ---------------------------------------------


def _scim_user(client: Client, directory: Directory, user_name: str) -> str:
    body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name, "active": True}
    response = client.post(f"/api/scim/v2.0/{directory.id}/Users", data=orjson.dumps(body), content_type=SCIM_CT)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _scim_rename(client: Client, directory: Directory, user_id: str, given: str) -> None:
    body = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "path": "name.givenName", "value": given}],
    }
    response = client.patch(
        f"/api/scim/v2.0/{directory.id}/Users/{user_id}", data=orjson.dumps(body), content_type=SCIM_CT
    )
    assert response.status_code == 200, response.content


def test_a_directory_without_a_webhook_has_a_feed_of_dropped_events(
    api_client: Client, directory_a: Directory, scim_client_a: Client
) -> None:
    assert not directory_a.has_webhook
    user_id = _scim_user(scim_client_a, directory_a, "ann@acme.example")
    _scim_rename(scim_client_a, directory_a, user_id, "Annie")
    body = api_client.get(_url(directory_a)).json()
    assert [(i["sequence"], i["event"]) for i in body["data"]] == [(1, "user.created"), (2, "user.updated")]
    assert {(i["delivery"]["status"], i["delivery"]["attempts"]) for i in body["data"]} == {("dropped", 0)}
    assert body["data"][1]["data"]["first_name"] == "Annie"
    assert body["events"] == {"last_sequence": 2, "oldest_sequence": 1}
    directory = api_client.get(f"/api/v1/directory-sync/{directory_a.id}").json()["data"]
    assert directory["events"] == {"last_sequence": 2, "oldest_sequence": 1}


def test_the_feed_shows_delivered_and_failed_attempts_with_the_log_switched_off(
    api_client: Client, receiver: Receiver, private_ok: Any
) -> None:
    ok = make_hooked_directory(receiver, path="/ok", log=False, tenant="acme")
    failing = make_hooked_directory(receiver, path="/fail", log=False, tenant="globex")
    for directory in (ok, failing):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
        _scim_user(client, directory, f"bob@{directory.tenant}.example")
        events_batch_deliver(directory_id=directory.id, target="directory")
    assert not WebhookDelivery.objects.exists()  # the log is off; the feed keeps the outcome anyway
    (delivered,) = api_client.get(_url(ok)).json()["data"]
    (failed,) = api_client.get(_url(failing)).json()["data"]
    assert delivered["sequence"] == failed["sequence"] == 1
    assert (delivered["delivery"]["status"], delivered["delivery"]["status_code"]) == ("delivered", 200)
    assert (failed["delivery"]["status"], failed["delivery"]["status_code"]) == ("failed", 500)
    for item in (delivered, failed):
        assert item["delivery"]["attempts"] == 1
        assert ISO_MS.fullmatch(item["delivery"]["last_attempt_at"])
    sent = {r.json["id"]: r for r in receiver.wait_for(2)}
    assert set(sent) == {delivered["id"], failed["id"]}
    for item in (delivered, failed):
        request = sent[item["id"]]
        assert request.headers["Roster-Event-Sequence"] == "1"
        assert {k: v for k, v in item.items() if k != "delivery"} == request.json  # the exact payload
