"""GET /readyz (contract §7.1): the database, and the broker when configured; 503 naming what fails."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client

from tests.webhooks.conftest import closed_port


def test_ready_without_a_broker_says_so(db: Any) -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "not configured"}


def test_an_anonymous_probe_learns_no_detail_of_a_failure(db: Any, settings: Any, console_log: Any) -> None:
    settings.CELERY_BROKER_URL = f"redis://:canary-password@127.0.0.1:{closed_port()}/0"
    log = console_log("json")
    response = Client().get("/readyz", HTTP_X_REQUEST_ID="ready-1")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json() == {
        "status": "unavailable",
        "database": "ok",
        "broker": "unreachable",
        "failing": ["broker"],
    }
    [line] = [o for o in log.objects() if o.get("request_id") == "ready-1"]
    assert line["level"] == "ERROR" and "broker unreachable (ConnectionError)" in line["message"]
    assert "canary-password" not in log.text


def test_liveness_stays_up_while_readiness_is_down(db: Any, settings: Any) -> None:
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    assert Client().get("/readyz").status_code == 503
    assert Client().get("/healthz").status_code == 200


def test_ready_with_a_reachable_broker(db: Any, broker_url: str) -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200 and response.json()["broker"] == "ok"


def test_readyz_only_answers_reads(db: Any) -> None:
    assert Client().post("/readyz").status_code == 405


@pytest.mark.django_db(transaction=True)
def test_a_lost_database_is_a_503_naming_it_and_the_next_probe_reconnects(monkeypatch: pytest.MonkeyPatch) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("terminates a PostgreSQL backend; CI runs it")
    from werkzeug.test import Client as WsgiClient

    from config.wsgi import application

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 600)
    connection.close()
    client = WsgiClient(application)
    assert client.get("/readyz").status_code == 200
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json["database"] == "unreachable"
    assert response.json["failing"] == ["database"]
    assert client.get("/readyz").status_code == 200


def test_an_unreachable_limit_store_leaves_the_node_ready(db: Any, settings: Any) -> None:
    settings.RATE_LIMIT_STORAGE_URL = "redis://127.0.0.1:1/0"
    response = Client().get("/readyz")
    assert response.status_code == 200
