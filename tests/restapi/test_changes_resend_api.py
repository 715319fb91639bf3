"""POST …/changes/resend on the REST API (and its dsync alias) and on the admin API (contract §5.1):
202 with the count, 400/401/404/409 in the envelope with nothing queued, an audit entry naming who
asked (the API key's name, or the admin)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.adminauth.conftest import ROOT, AdminSession, login
from tests.webhooks.feedrows import feed_events
from webhooks.models import EventState, WebhookEvent

pytestmark = pytest.mark.django_db

F = EventState.FAILED


@pytest.fixture
def hooked(settings) -> Directory:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    directory = directory_create(
        actor=TEST_ACTOR,
        data={"tenant": "acme", "product": "crm", "name": "Acme", "webhook_url": "http://127.0.0.1:9/hook"},
    )
    feed_events(directory, [EventState.DELIVERED, F, F])
    return directory


def _post(client: Client, url: str, body: Any, **extra: Any) -> Any:
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(url, data, content_type="application/json", **extra)


def _queued(directory: Directory) -> list[int]:
    return sorted(
        WebhookEvent.objects.filter(directory_id=directory.id, state=EventState.PENDING, resend=True).values_list(
            "sequence", flat=True
        )
    )


@pytest.mark.parametrize("prefix", ["/api/v1/directory-sync", "/api/v1/dsync"])
def test_rest_resend_by_range_answers_202_with_the_count_and_is_audited_with_the_keys_name(
    hooked: Directory, db_key: str, prefix: str
) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {db_key}")
    response = _post(client, f"{prefix}/{hooked.id}/changes/resend", {"from": 1, "to": 3})
    assert response.status_code == 202, response.content
    assert response.json() == {"data": {"queued": 3}, "error": None}
    assert _queued(hooked) == [1, 2, 3]
    entry = AuditEntry.objects.get(action="directory.events_resent")
    assert (entry.actor, entry.directory_id, entry.target_id) == (None, hooked.id, str(hooked.id))
    # The API key as every REST entry names it: its name and prefix.
    assert entry.details["actor"] == entry.details["credential"]
    assert entry.details["via"] == "rest-api"
    assert entry.details["credential"].startswith("api key test app (")
    assert (entry.details["from"], entry.details["to"], entry.details["queued"]) == (1, 3, 3)


def test_rest_resend_by_ids_with_the_environment_key(hooked: Directory, api_client: Client) -> None:
    failed = WebhookEvent.objects.get(directory_id=hooked.id, sequence=2)
    response = _post(api_client, f"/api/v1/directory-sync/{hooked.id}/changes/resend", {"event_ids": [str(failed.id)]})
    assert response.status_code == 202 and response.json()["data"] == {"queued": 1}
    assert _queued(hooked) == [2]
    entry = AuditEntry.objects.get(action="directory.events_resent")
    assert entry.details["event_ids"] == [str(failed.id)] and entry.details["actor"] == "API_KEYS"


JUNK = [
    ("not JSON", "{from: 1"),
    ("an array", [1, 2]),
    ("a string", '"resend"'),
    ("empty", ""),
    ("unknown field", {"from": 1, "to": 2, "all": True}),
    ("both", {"from": 1, "to": 2, "event_ids": [str(uuid.uuid4())]}),
    ("to missing", {"from": 1}),
    ("from a bool", {"from": True, "to": 2}),
    ("from a float", {"from": 1.5, "to": 2}),
    ("from a string", {"from": "1", "to": 2}),
    ("from null", {"from": None, "to": 2}),
    ("from after to", {"from": 3, "to": 1}),
    ("over 1000", {"from": 1, "to": 1001}),
    ("past 64 bits", {"from": 1, "to": 2**64}),
    ("ids empty", {"event_ids": []}),
    ("ids not UUIDs", {"event_ids": ["abc"]}),
    ("an unknown id", {"event_ids": [str(uuid.uuid4())]}),
    ("NUL in an id", {"event_ids": ["\u0000"]}),
]


@pytest.mark.parametrize(("case", "body"), JUNK, ids=[case for case, _ in JUNK])
def test_rest_junk_is_a_400_in_the_envelope_and_nothing_is_queued_or_audited(
    hooked: Directory, api_client: Client, case: str, body: Any
) -> None:
    response = _post(api_client, f"/api/v1/directory-sync/{hooked.id}/changes/resend", body)
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["data"] is None and response.json()["error"]["code"] == 400
    assert _queued(hooked) == []
    assert not AuditEntry.objects.filter(action="directory.events_resent").exists()


def test_rest_401_404_and_409(hooked: Directory, api_client: Client) -> None:
    url = f"/api/v1/directory-sync/{hooked.id}/changes/resend"
    assert _post(Client(), url, {"from": 1, "to": 1}).status_code == 401
    assert _post(Client(HTTP_AUTHORIZATION="Bearer nope"), url, {"from": 1, "to": 1}).status_code == 401
    for missing in (str(uuid.uuid4()), "not-an-id"):
        response = _post(api_client, f"/api/v1/directory-sync/{missing}/changes/resend", {"from": 1, "to": 1})
        assert response.status_code == 404 and response.json()["error"]["code"] == 404
    Directory.objects.filter(pk=hooked.pk).update(deactivated=True)
    response = _post(api_client, url, {"from": 1, "to": 3})
    assert response.status_code == 409 and "deactivated" in response.json()["error"]["message"]
    Directory.objects.filter(pk=hooked.pk).update(deactivated=False, webhook_url="")
    response = _post(api_client, url, {"from": 1, "to": 3})
    assert response.status_code == 409 and "webhook" in response.json()["error"]["message"]
    assert _queued(hooked) == []
    assert not AuditEntry.objects.filter(action="directory.events_resent").exists()
    assert api_client.get(url).status_code == 405


def test_the_openapi_document_states_the_route_its_body_and_its_answers(api_client: Client) -> None:
    doc = api_client.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
        operation = doc["paths"][f"{prefix}/{{directory_id}}/changes/resend"]["post"]
        assert set(operation["responses"]) == {"202", "400", "401", "404", "406", "409", "413", "429", "500", "503"}
        assert operation["responses"]["202"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "/ResendEnvelope"
        )
        body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert body.endswith("/ResendInput")
    schemas = doc["components"]["schemas"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in schemas["ResendInput"]["oneOf"]] == [
        "ResendRangeInput",
        "ResendIdsInput",
    ]
    by_range, by_ids = schemas["ResendRangeInput"], schemas["ResendIdsInput"]
    assert by_range["required"] == ["from", "to"] and by_range["additionalProperties"] is False
    for end in ("from", "to"):
        assert (by_range["properties"][end]["minimum"], by_range["properties"][end]["maximum"]) == (1, 2**63 - 1)
    ids = by_ids["properties"]["event_ids"]
    assert (ids["minItems"], ids["maxItems"], ids["items"]["format"]) == (1, 1000, "uuid")
    assert by_ids["required"] == ["event_ids"] and by_ids["additionalProperties"] is False
    assert schemas["ResendResult"]["properties"]["queued"]["maximum"] == 1000


# --- the admin API --------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(settings, db) -> Client:  # noqa: ANN001
    settings.ADMIN_ROOT_TOKEN = ROOT
    response = login()
    assert response.status_code == 200, response.content
    return AdminSession(response.json()).client()


def test_admin_api_resend_answers_202_and_is_audited_with_the_admin(hooked: Directory, admin_client: Client) -> None:
    url = f"/auditlog/admin/v1/directories/{hooked.id}/changes/resend"
    response = _post(admin_client, url, {"from": 2, "to": 1000})
    assert response.status_code == 202, response.content
    assert response.json() == {"data": {"queued": 2}, "error": None}
    assert _queued(hooked) == [2, 3]
    entry = AuditEntry.objects.get(action="directory.events_resent")
    assert entry.actor is not None and entry.actor_email == "ops@example.com"
    assert (entry.details["via"], entry.details["actor"], entry.details["queued"]) == (
        "admin-api",
        "ops@example.com",
        2,
    )
    # The trail's own filter finds it by the admin.
    listed = admin_client.get("/auditlog/admin/v1/audit", {"action": "directory.events_resent"}).json()["data"]
    assert [e["actor"]["email"] for e in listed] == ["ops@example.com"]


def test_admin_api_refusals(hooked: Directory, admin_client: Client) -> None:
    url = f"/auditlog/admin/v1/directories/{hooked.id}/changes/resend"
    assert _post(admin_client, url, {"from": 0, "to": 1}).status_code == 400
    assert _post(admin_client, url, "[]").status_code == 400
    assert _post(admin_client, url, {"event_ids": [str(uuid.uuid4())]}).status_code == 400
    missing = f"/auditlog/admin/v1/directories/{uuid.uuid4()}/changes/resend"
    assert _post(admin_client, missing, {"from": 1, "to": 1}).status_code == 404
    assert _post(Client(), url, {"from": 1, "to": 1}).status_code == 401
    Directory.objects.filter(pk=hooked.pk).update(deactivated=True)
    response = _post(admin_client, url, {"from": 1, "to": 1})
    assert response.status_code == 409 and response.json()["error"]["code"] == 409
    assert _queued(hooked) == []
    assert not AuditEntry.objects.filter(action="directory.events_resent").exists()
