"""The REST API keeps the contract its own OpenAPI document states, checked by schemathesis.

The document is loaded the way a client gets it (`GET /api/v1/schema` with the test API key) and every
operation in it is exercised in-process through `config.wsgi.application`, the WSGI entry granian
serves, with schemathesis's examples, coverage (boundary and invalid values for each parameter and body
field) and fuzzing phases, positive and negative data. Every response must pass these checks:
not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
response_headers_conformance, negative_data_rejection (invalid input must be a 4xx), missing_required_header,
unsupported_method (a method the path lacks is a 405), allow_header_conformance (its Allow header lists
the documented methods) and ignored_auth (no key, a 401).

Left out: positive_data_acceptance, which expects every schema-valid request to succeed. Some rules
cannot be stated in OpenAPI 3.0 (webhook_secret needs a webhook_url; `failed` and `status` must agree;
no NUL in any string), so a schema-valid request can still be a documented 400.

The database runs in transaction mode (real commits, as production runs), with directory A (tenant
acme, product crm), a user in a group and two delivery-log entries in it. Half the schema-valid cases
that name a directory, a user, a group or a setup link are pointed at those rows (and at acme/crm), so the id routes
answer real 200s with full bodies and not only 404s.

Bounded for CI: ROSTER_CONTRACT_MAX_EXAMPLES cases per operation in the fuzzing phase (default 15; the
coverage phase adds its own fixed set). Before a release, run a longer pass, e.g.

    ROSTER_CONTRACT_MAX_EXAMPLES=500 bash scripts/test.sh tests/contract -q -s --timeout=0

(-s prints the number of cases per operation; --timeout=0 lifts pytest-timeout's 300 s per operation;
add CI=true to run it on PostgreSQL, where column lengths are enforced and SQLite's are not)

The run is reproducible: the same seed generates the same cases. ROSTER_CONTRACT_SEED=<n> (default
20261123) generates another set, which is worth doing in a longer pass too.
"""

from __future__ import annotations

import os
import socket
import uuid
import zlib
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.utils import timezone
from schemathesis.config import SchemathesisConfig

from audit.actors import Actor
from config.wsgi import application
from directories.models import DirectoryGroup, DirectoryUser, GroupMembership
from setuplinks.services import setup_link_create
from tests.actors import TEST_ACTOR
from webhooks.models import WebhookDelivery
from webhooks.services.endpoints import endpoint_create

MAX_EXAMPLES = int(os.environ.get("ROSTER_CONTRACT_MAX_EXAMPLES", "15"))
SEED = int(os.environ.get("ROSTER_CONTRACT_SEED", "20261123"))
AUTHORIZATION = "Bearer test-env-api-key"  # config/settings_test.py API_KEYS
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "ignored_auth",
]

# (operation, status) of every case run, for the summary test at the end of the module.
cases_run: list[tuple[str, int]] = []


def _config() -> SchemathesisConfig:
    return SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "headers": {"Authorization": AUTHORIZATION},
            "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "database": "none"},
            "phases": {"examples": {"enabled": True}, "coverage": {"enabled": True}, "fuzzing": {"enabled": True}},
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        }
    )


@pytest.fixture
def real_rows(transactional_db: None) -> dict[str, Any]:
    from directories.services import directory_create, directory_scim_oauth_secret_add

    # With a webhook, so that a resend of its changes feed can succeed (a directory without one is a 409).
    directory = directory_create(
        actor=TEST_ACTOR,
        data={"name": "Acme Okta", "tenant": "acme", "product": "crm", "webhook_url": "https://app.example.com/hooks"},
    )
    user = DirectoryUser.objects.create(
        directory=directory,
        user_name="ann@acme.example",
        user_name_key="ann@acme.example",
        first_name="Ann",
        last_name="Lee",
        email="ann@acme.example",
        raw={"userName": "ann@acme.example"},
    )
    group = DirectoryGroup.objects.create(
        directory=directory, display_name="Eng", display_name_key="eng", raw={"displayName": "Eng"}
    )
    GroupMembership.objects.create(group=group, user=user)
    # One delivered and one failed attempt, so the delivery log's 200s carry entries of both shapes.
    for delivered in (True, False):
        WebhookDelivery.objects.create(
            directory=directory,
            event_id=uuid.uuid4(),
            event_type="user.created",
            endpoint="https://app.example.com/hooks",
            status_code=200 if delivered else None,
            latency_ms=12 if delivered else None,
            error_class="" if delivered else "Timeout",
            error_message="" if delivered else "no answer within 3 s",
            payload='{"event": "user.created"}',
            delivered=delivered,
            attempted_at=timezone.now(),
            finished_at=timezone.now() if delivered else None,
        )
    # Its changes feed: a delivered, a failed and a pending event, numbered 1 to 3 as the write side does, then
    # the group's creation (4).
    _feed_events(directory, str(user.id), group)
    # A setup link, so that revoking one answers its 204 (revoking it again does too).
    link, _token = setup_link_create(directory=directory, actor=Actor(name="contract", via="rest-api"))
    # An OAuth client secret, so that revoking one answers its 204 (once: then it is gone, a 404).
    _directory, secret, _value = directory_scim_oauth_secret_add(directory=directory, actor=TEST_ACTOR)
    # A webhook endpoint, so that its routes answer 2xx (deleting it: once). Its host does not resolve
    # here (`_no_dns`), so `test` answers 200 with the failed attempt.
    endpoint = endpoint_create(actor=TEST_ACTOR, data={"url": "https://hooks.acme.test/all", "tenant": "acme"})
    return {
        "directory_id": str(directory.id),
        "user_id": str(user.id),
        "group_id": str(group.id),
        "link_id": str(link.id),
        "secret_id": secret["id"],
        "endpoint_id": str(endpoint.id),
    }


def _feed_events(directory: Any, user_id: str, group: Any) -> None:
    import orjson

    from core.timefmt import iso_utc
    from webhooks.models import EventSequence, EventState, WebhookEvent

    now = timezone.now()
    outcomes = [(EventState.DELIVERED, 1, 200), (EventState.FAILED, 1, 500), (EventState.PENDING, 0, None)]
    for sequence, (state, attempts, status_code) in enumerate(outcomes, start=1):
        event_id = uuid.uuid4()
        payload = {
            "id": str(event_id),
            "event": "user.updated",
            "created_at": iso_utc(now),
            "sequence": sequence,
            "directory_id": str(directory.id),
            "tenant": directory.tenant,
            "product": directory.product,
            "data": {"id": user_id},
        }
        WebhookEvent.objects.create(
            id=event_id,
            directory_id=directory.id,
            event_type="user.updated",
            body=orjson.dumps(payload).decode(),
            state=state,
            sequence=sequence,
            attempts=attempts,
            status_code=status_code,
            last_attempt_at=now if attempts else None,
            finished_at=now if attempts else None,
        )
    # The group made after them, so that history shows it (and its members' route a 200) from event 4.
    group_event = uuid.uuid4()
    from directories.rendering import group_data

    WebhookEvent.objects.create(
        id=group_event,
        directory_id=directory.id,
        event_type="group.created",
        body=orjson.dumps(
            {
                "id": str(group_event),
                "event": "group.created",
                "created_at": iso_utc(now),
                "sequence": len(outcomes) + 1,
                "directory_id": str(directory.id),
                "tenant": directory.tenant,
                "product": directory.product,
                "data": group_data(group),
            }
        ).decode(),
        state=EventState.DELIVERED,
        sequence=len(outcomes) + 1,
        attempts=1,
        status_code=200,
        last_attempt_at=now,
        finished_at=now,
    )
    EventSequence.objects.create(directory_id=directory.id, last=len(outcomes) + 1)


@pytest.fixture(autouse=True)
def _no_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    def unresolved(host: str, port: int) -> list:
        # Webhook URLs in generated bodies name random hosts; their save-time lookup is the one thing
        # that would leave the machine. An unresolvable name is accepted, as in production.
        raise socket.gaierror(socket.EAI_NONAME, "not resolved in tests")

    monkeypatch.setattr("core.outbound.resolve", unresolved)


# Loaded when the module is collected, the way a client gets it: the document's route needs only the
# API key (from settings, no database), so no fixture is needed for this step.
schema = schemathesis.openapi.from_wsgi(
    "/api/v1/schema", application, config=_config(), headers={"Authorization": AUTHORIZATION}
)
# schemathesis leaves out the operation its document was loaded from; that route is in the contract too.
schema.location = None


def _point_at_real_rows(case: Any, rows: dict[str, Any]) -> None:
    """Half the schema-valid cases that name a directory, user or group get the fixture's rows."""
    meta = case.meta
    if meta is None or meta.generation.mode.is_negative or not case.path_parameters:
        return
    if any(info.mode.is_negative for info in meta.components.values()):
        return
    name = next(iter(case.path_parameters))
    if name not in rows or zlib.crc32(str(case.path_parameters[name]).encode()) % 2:
        return
    for each in case.path_parameters:  # a link or secret of the directory too (…/setup-links/{link_id})
        if each in rows:
            case.path_parameters[each] = rows[each]
    if isinstance(case.query, dict) and "tenant" in case.query:
        case.query["tenant"], case.query["product"] = "acme", "crm"
    if isinstance(case.query, dict) and ("/history/" in case.path or case.path.endswith("/diff")):
        # A point the fixture's feed has (events 1 to 4), so the answer is a snapshot or a difference, not
        # the 400 of a random time or number.
        for name in ("at", "sequence", "from", "to", "cursor"):
            case.query.pop(name, None)
        if case.path.endswith("/diff"):
            case.query["from"], case.query["to"] = "1", "4"
        else:
            case.query["sequence"] = "4"


@schema.parametrize()
# The rows are meant to outlive each generated case: every case of an operation reads the same directory.
@hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_every_rest_operation_keeps_the_contract_of_the_document(case: Any, real_rows: dict[str, Any]) -> None:
    _point_at_real_rows(case, real_rows)
    response = case.call_and_validate()
    cases_run.append((case.operation.label, response.status_code))


def test_the_contract_run_exercised_every_operation_and_reached_real_rows() -> None:
    """Counts what the run above generated (printed with -s), and fails if an operation got no case
    (a route fell out of the document or the run) or never answered a 2xx (the cases never reached a
    real row, so the response bodies of success were not checked)."""
    if not cases_run:
        pytest.skip("run together with the contract test above")
    statuses: dict[str, dict[int, int]] = {}
    for label, status in cases_run:
        statuses.setdefault(label, {}).setdefault(status, 0)
        statuses[label][status] += 1
    print(f"\nschemathesis: {len(cases_run)} cases over {len(statuses)} operations")
    for label, counts in sorted(statuses.items()):
        print(f"  {sum(counts.values()):5d}  {label}  {dict(sorted(counts.items()))}")
    assert len(statuses) == 73, sorted(statuses)
    assert [label for label, counts in statuses.items() if not any(200 <= s < 300 for s in counts)] == []
