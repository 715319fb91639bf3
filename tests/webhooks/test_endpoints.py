"""Webhook endpoints (contract §5.2): validation, revisions, the worker's fan-out and each delivery's
single attempt, both signature formats (the standard one checked with the official library too)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from standardwebhooks import Webhook, WebhookVerificationError

from audit.models import AuditEntry
from core.errors import ValidationFailed
from directories.models import Directory
from directories.services import directory_create, directory_update
from tests.actors import TEST_ACTOR
from tests.webhooks.conftest import Receiver, make_hooked_directory, single_drain_thread_on_sqlite
from webhooks.models import EndpointDelivery, EventState, WebhookEndpoint, WebhookEvent
from webhooks.services import drain_pool, draining
from webhooks.services.endpoints import (
    endpoint_create,
    endpoint_delete,
    endpoint_secret_rotate,
    endpoint_update,
)
from webhooks.services.fanout import endpoint_test_send
from webhooks.signing import standard_headers, standard_key

pytestmark = pytest.mark.django_db(transaction=True)
SCIM_CT = "application/scim+json"


@pytest.fixture(autouse=True)
def one_pool_thread_on_sqlite() -> Iterator[None]:
    with single_drain_thread_on_sqlite():
        yield


def _settled(response: Any) -> Any:
    assert drain_pool.drain(timeout=15)
    return response


def _create_user(directory: Directory, name: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
    body = {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": name,
        "name": {"givenName": "Ann", "familyName": "Lee"},
        "emails": [{"value": name, "primary": True, "type": "work"}],
        "active": True,
    }
    response = _settled(client.post(f"/api/scim/v2.0/{directory.id}/Users", json.dumps(body), content_type=SCIM_CT))
    assert response.status_code == 201, response.content
    return response.json()


def _plain_directory(tenant: str = "acme", product: str = "crm") -> Directory:
    return directory_create(actor=TEST_ACTOR, data={"tenant": tenant, "product": product, "type": "okta-scim-v2"})


def _endpoint(receiver: Receiver, path: str = "/ok", **data: Any) -> WebhookEndpoint:
    return endpoint_create(actor=TEST_ACTOR, data={"url": receiver.url(path), **data})


def _paths(receiver: Receiver) -> list[tuple[str, str]]:
    return [(r.path.split("?")[0], r.json["event"]) for r in receiver.requests]


# --- validation and audit ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "http://127.0.0.1/x"}, "url"),
        ({"url": "https://example.com/x", "events": ["user.exploded"]}, "events"),
        ({"url": "https://example.com/x", "events": []}, "events"),
        ({"url": "https://example.com/x", "events": ["*", "user.created"]}, "events"),
        ({"url": "https://example.com/x", "directory_id": "00000000-0000-0000-0000-000000000001"}, "directory_id"),
        ({"url": "https://example.com/x", "directory_id": "nope"}, "directory_id"),
        ({"url": "https://example.com/x", "format": "fancy"}, "format"),
        ({"url": "https://example.com/x", "format": "standard", "secret": "plain"}, "secret"),
        ({"url": "https://example.com/x", "tenant": 5}, "tenant"),
        ({"url": "https://example.com/x", "colour": "red"}, "colour"),
        ({"events": ["*"]}, "url"),
    ],
)
def test_a_bad_endpoint_is_refused_naming_its_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        endpoint_create(actor=TEST_ACTOR, data=data)
    assert refused.value.field == field
    assert not WebhookEndpoint.objects.exists()


def test_create_generates_a_standard_secret_and_every_change_is_audited() -> None:
    directory = _plain_directory()
    endpoint = endpoint_create(
        actor=TEST_ACTOR,
        data={"url": "https://example.com/hook", "events": ["user.deleted"], "directory_id": str(directory.id)},
    )
    assert endpoint.secret.startswith("whsec_") and standard_key(endpoint.secret) is not None
    assert endpoint.events == ["user.deleted"] and endpoint.format == "roster" and endpoint.enabled
    endpoint_update(actor=TEST_ACTOR, endpoint=endpoint, data={"enabled": False})
    endpoint_update(actor=TEST_ACTOR, endpoint=endpoint, data={"events": ["*"], "tenant": "acme"})
    endpoint_secret_rotate(actor=TEST_ACTOR, endpoint=endpoint, data={})
    endpoint_delete(actor=TEST_ACTOR, endpoint=endpoint)
    actions = list(
        AuditEntry.objects.filter(target_type="webhook_endpoint", target_id=str(endpoint.id))
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == [
        "webhook_endpoint.created",
        "webhook_endpoint.disabled",
        "webhook_endpoint.updated",
        "webhook_endpoint.secret_rotated",
        "webhook_endpoint.deleted",
    ]
    for entry in AuditEntry.objects.filter(target_type="webhook_endpoint"):
        assert endpoint.secret not in json.dumps(entry.details)
        assert entry.details["actor"] == TEST_ACTOR.name


def test_switching_to_standard_needs_a_whsec_secret() -> None:
    endpoint = endpoint_create(actor=TEST_ACTOR, data={"url": "https://example.com/hook", "secret": "roster-style"})
    with pytest.raises(ValidationFailed) as refused:
        endpoint_update(actor=TEST_ACTOR, endpoint=endpoint, data={"format": "standard"})
    assert refused.value.field == "format"
    endpoint_secret_rotate(actor=TEST_ACTOR, endpoint=endpoint, data={"format": "standard"})
    assert endpoint.format == "standard" and endpoint.secret.startswith("whsec_")
    with pytest.raises(ValidationFailed):
        endpoint_secret_rotate(actor=TEST_ACTOR, endpoint=endpoint, data={"grace_seconds": 86401})


# --- fan-out ----------------------------------------------------------------------------------------------


def test_each_event_goes_to_every_matching_endpoint_once_and_to_no_other(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    acme = _plain_directory("acme", "crm")
    globex = _plain_directory("globex", "crm")
    _endpoint(receiver, "/all")
    _endpoint(receiver, "/acme", tenant="acme")
    _endpoint(receiver, "/hr", product="hr")
    _endpoint(receiver, "/globex-dir", directory_id=str(globex.id))
    _endpoint(receiver, "/deleted-only", events=["user.deleted"])
    _endpoint(receiver, "/off", enabled=False)
    _create_user(acme, "ann@acme.example")
    _create_user(globex, "bob@globex.example")
    receiver.wait_for(4)
    time.sleep(0.2)
    got = sorted(_paths(receiver))
    assert got == sorted(
        [("/all", "user.created"), ("/all", "user.created"), ("/acme", "user.created"), ("/globex-dir", "user.created")]
    )
    # The directory's own webhook is not needed for endpoints; its feed says where each event went.
    assert EndpointDelivery.objects.filter(state=EventState.DELIVERED).count() == 4
    assert set(WebhookEvent.objects.values_list("fanned_out", flat=True)) == {True}


def test_roster_format_endpoint_and_own_webhook_both_get_their_signature(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    from roster_client.webhooks import verify_signature

    directory = make_hooked_directory(receiver, path="/own")
    endpoint = _endpoint(receiver, "/ep", secret="roster-secret-0123456789")
    _create_user(directory, "ann@acme.example")
    got = receiver.wait_for(2)
    by_path = {r.path: r for r in got}
    receiver.assert_signed(by_path["/own"], "whsec-acme-0123456789abcdef")
    verify_signature(by_path["/ep"].body, by_path["/ep"].headers.get("Roster-Signature"), endpoint.secret)
    assert by_path["/ep"].headers["Roster-Event-Sequence"] == "1"
    assert by_path["/ep"].body == by_path["/own"].body


def test_standard_format_verifies_with_the_official_library_and_both_secrets_during_a_grace(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
) -> None:
    directory = _plain_directory()
    endpoint = _endpoint(receiver, "/std", format="standard")
    old = endpoint.secret
    _create_user(directory, "ann@acme.example")
    first = receiver.wait_for(1)[0]
    headers = {k.lower(): v for k, v in first.headers.items()}
    assert Webhook(old).verify(first.body, headers)["event"] == "user.created"
    assert headers["webhook-id"] == first.json["id"] and headers["roster-event-sequence"] == "1"

    endpoint_secret_rotate(actor=TEST_ACTOR, endpoint=endpoint, data={"grace_seconds": 600})
    new = endpoint.secret
    _create_user(directory, "bob@acme.example")
    second = {k.lower(): v for k, v in receiver.wait_for(2)[1].headers.items()}
    assert len(second["webhook-signature"].split(" ")) == 2
    body = receiver.requests[1].body
    assert Webhook(new).verify(body, second) and Webhook(old).verify(body, second)

    endpoint_secret_rotate(actor=TEST_ACTOR, endpoint=endpoint, data={"grace_seconds": 0})
    _create_user(directory, "cy@acme.example")
    third = {k.lower(): v for k, v in receiver.wait_for(3)[2].headers.items()}
    assert len(third["webhook-signature"].split(" ")) == 1
    with pytest.raises(WebhookVerificationError):
        Webhook(new).verify(receiver.requests[2].body, third)
    assert Webhook(endpoint.secret).verify(receiver.requests[2].body, third)


def test_our_standard_signature_is_the_documented_one() -> None:
    key = bytes(range(32))
    secret = "whsec_" + base64.b64encode(key).decode()
    body = b'{"a":1}'
    headers = standard_headers(body, [secret], "msg_1", timestamp=1700000000)
    import hashlib
    import hmac

    expected = base64.b64encode(hmac.new(key, b"msg_1.1700000000." + body, hashlib.sha256).digest()).decode()
    assert headers == {"webhook-id": "msg_1", "webhook-timestamp": "1700000000", "webhook-signature": f"v1,{expected}"}


def test_an_endpoint_change_applies_to_events_recorded_after_it(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    directory = _plain_directory()
    kicks: list[Any] = []
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: kicks.append(directory_id))
    before = _endpoint(receiver, "/before")
    _create_user(directory, "ann@acme.example")  # recorded; the worker has not run yet
    endpoint_update(actor=TEST_ACTOR, endpoint=before, data={"enabled": False})
    _endpoint(receiver, "/after")
    _create_user(directory, "bob@acme.example")
    monkeypatch.undo()
    drain_pool._drain_in_process((str(directory.id), "directory"))
    time.sleep(0.1)
    got = sorted((path, r.json["data"]["email"]) for r in receiver.requests for path in [r.path])
    assert got == [("/after", "bob@acme.example"), ("/before", "ann@acme.example")]


def test_until_an_endpoint_is_enabled_a_drain_does_no_endpoint_work_and_earlier_events_never_match(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from webhooks.services.sweeping import events_sweep

    directory = _plain_directory()
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)
    _endpoint(receiver, "/off", enabled=False)  # a disabled endpoint is not one that can match
    _create_user(directory, "ann@acme.example")
    with CaptureQueriesContext(connection) as queries:
        drain_pool._drain_in_process((str(directory.id), "directory"))
    touched = " ".join(q["sql"] for q in queries.captured_queries)
    assert EndpointDelivery._meta.db_table not in touched and "fanned_out" not in touched
    assert list(WebhookEvent.objects.values_list("fanned_out", flat=True)) == [False]
    # The sweep hands no drain the events that can match nothing.
    assert events_sweep(pending_age=timedelta(0)).enqueued == 0

    _endpoint(receiver, "/on")
    _create_user(directory, "bob@acme.example")
    monkeypatch.undo()
    drain_pool._drain_in_process((str(directory.id), "directory"))
    time.sleep(0.1)
    assert [(path, r.json["data"]["email"]) for r in receiver.requests for path in [r.path]] == [
        ("/on", "bob@acme.example")
    ]
    fanned = dict(WebhookEvent.objects.values_list("body", "fanned_out"))
    assert sorted(fanned.values()) == [False, True]  # ann's event predates every enabled endpoint


def test_a_failing_endpoint_gets_one_attempt_and_does_not_hold_the_others(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    directory = _plain_directory()
    failing = _endpoint(receiver, "/fail")
    _endpoint(receiver, "/ok")
    _create_user(directory, "ann@acme.example")
    receiver.wait_for(2)
    drain_pool.drain(timeout=5)
    failed = EndpointDelivery.objects.get(endpoint=failing)
    assert failed.state == EventState.FAILED and failed.status_code == 500 and failed.attempts == 1
    assert EndpointDelivery.objects.exclude(endpoint=failing).get().state == EventState.DELIVERED
    time.sleep(0.2)
    assert len(receiver.requests) == 2


def test_a_deleted_endpoint_gets_nothing_more(receiver: Receiver, private_ok, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    directory = _plain_directory()
    endpoint = _endpoint(receiver, "/gone")
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)
    _create_user(directory, "ann@acme.example")
    monkeypatch.undo()
    from webhooks.services.fanout import endpoint_deliveries_send, fanout

    assert fanout(directory_id=directory.id) == 1
    endpoint_delete(actor=TEST_ACTOR, endpoint=endpoint)
    result = endpoint_deliveries_send(directory_id=directory.id)
    assert result.dropped == 1 and receiver.requests == []
    assert EndpointDelivery.objects.get().state_reason == "endpoint deleted"


def test_the_directory_webhook_can_use_the_standard_format(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    directory = make_hooked_directory(receiver, path="/own")
    with pytest.raises(ValidationFailed):
        directory_update(actor=TEST_ACTOR, directory=directory, data={"webhook_format": "standard"})
    secret = "whsec_" + base64.b64encode(b"k" * 32).decode()
    directory_update(
        actor=TEST_ACTOR, directory=directory, data={"webhook_format": "standard", "webhook_secret": secret}
    )
    _create_user(directory, "ann@acme.example")
    got = receiver.wait_for(1)[0]
    assert Webhook(secret).verify(got.body, {k.lower(): v for k, v in got.headers.items()})
    assert "Roster-Signature" not in got.headers


def test_the_test_event_reports_the_receivers_outcome(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    good = _endpoint(receiver, "/ok", format="standard")
    outcome = endpoint_test_send(endpoint=good)
    assert outcome.delivered and outcome.status_code == 200 and outcome.error is None
    sent = receiver.requests[0]
    assert Webhook(good.secret).verify(sent.body, {k.lower(): v for k, v in sent.headers.items()})
    assert sent.json["event"] == "webhook.test" and sent.json["data"] == {"endpoint_id": str(good.id)}
    assert "sequence" not in sent.json
    bad = endpoint_test_send(endpoint=_endpoint(receiver, "/fail"))
    assert not bad.delivered and bad.status_code == 500 and bad.error
    assert not EndpointDelivery.objects.exists()


def test_enabled_since_is_the_first_enabled_revision_and_is_kept() -> None:
    """The fan-out's start (webhooks.services.fanout.enabled_since): None while no endpoint was ever enabled
    (a disabled one does not count), then when the earliest enabled revision took effect, kept by the
    process once known."""
    from webhooks.models import WebhookEndpointRevision
    from webhooks.services import fanout

    fanout.enabled_since_forget()
    assert fanout.enabled_since() is None
    endpoint_create(data={"url": "https://hooks.example.com/off", "enabled": False}, actor=TEST_ACTOR)
    assert fanout.enabled_since() is None
    first = endpoint_create(data={"url": "https://hooks.example.com/a"}, actor=TEST_ACTOR)
    later = endpoint_create(data={"url": "https://hooks.example.com/b"}, actor=TEST_ACTOR)
    starts = {
        revision.endpoint_id: revision.valid_from
        for revision in WebhookEndpointRevision.objects.filter(endpoint__in=[first, later])
    }
    assert starts[first.id] < starts[later.id]
    assert fanout.enabled_since() == starts[first.id]
    WebhookEndpointRevision.objects.filter(endpoint=first).update(valid_from=starts[later.id] + timedelta(days=1))
    assert fanout.enabled_since() == starts[first.id]  # kept: the process does not read it again
    fanout.enabled_since_forget()
    assert fanout.enabled_since() == starts[later.id]
