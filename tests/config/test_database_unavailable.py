"""A lost database connection: 503 with Retry-After and one log line, then a fresh connection.

Run through the real WSGI entry (config.wsgi.application), not Django's test client: the test client
keeps connections open across requests on purpose, while the point here is what the server's own
request cycle does with a connection that broke (Django closes it when the request ends, because an
error occurred and it no longer answers; CONN_HEALTH_CHECKS stays off).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection
from werkzeug.test import Client as WsgiClient

from config.wsgi import application

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="kills a PostgreSQL backend; CI runs it on PostgreSQL"
)

AUTH = {"Authorization": "Bearer test-env-api-key"}
LIST = "/api/v1/directory-sync?tenant=acme&product=crm"


@pytest.fixture
def kept_connection() -> Iterator[None]:
    """Connections kept between requests, as production keeps them (CONN_MAX_AGE=600; the test settings
    use 0, which would hide the broken connection behind a new one for every request)."""
    connection.close()
    saved = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 600
    yield
    connection.settings_dict["CONN_MAX_AGE"] = saved
    connection.close()


def _terminate(pid: int) -> None:
    """Kill one backend from a second connection, as a failover or an admin's pg_terminate_backend does."""
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def _client() -> WsgiClient:
    # buffered: read the whole body, then close() the response iterable the way a WSGI server does;
    # Django ends the request (request_finished, which closes a broken connection) in that close().
    class Buffered(WsgiClient):
        def open(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            return super().open(*args, buffered=True, **kwargs)

    return Buffered(application)


def _errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.django_db(transaction=True)
def test_a_killed_connection_answers_503_once_and_the_next_request_reconnects(
    kept_connection: None, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client()
    first = client.get(LIST, headers=AUTH)
    assert first.status_code == 200
    assert connection.connection is not None, "the connection should be kept after a request"
    pid = connection.connection.info.backend_pid

    _terminate(pid)
    caplog.clear()
    broken = client.get(LIST, headers={**AUTH, "X-Request-Id": "outage-1"})

    assert broken.status_code == 503
    assert broken.headers["Retry-After"] == "5"
    assert broken.headers["X-Request-Id"] == "outage-1"
    assert broken.headers["Content-Type"] == "application/json"
    assert broken.get_json() == {
        "data": None,
        "error": {"message": "The database is unavailable; retry shortly.", "code": 503},
    }
    errors = _errors(caplog)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert errors[0].exc_info is None
    assert "OperationalError" in errors[0].getMessage() and "outage-1" in errors[0].getMessage()
    # The request's end dropped the broken connection (errors occurred and it no longer answers).
    assert connection.connection is None

    again = client.get(LIST, headers=AUTH)
    assert again.status_code == 200
    assert again.get_json() == {"data": [], "error": None}
    assert connection.connection.info.backend_pid != pid


@pytest.mark.django_db(transaction=True)
def test_healthz_answers_503_for_a_killed_connection_then_200(
    kept_connection: None, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client()
    assert client.get("/healthz").status_code == 200
    _terminate(connection.connection.info.backend_pid)
    caplog.clear()

    broken = client.get("/healthz")
    assert broken.status_code == 503
    assert broken.headers["Retry-After"] == "5"
    assert broken.get_json()["status"] == "unavailable"
    assert len(_errors(caplog)) == 1

    assert client.get("/healthz").status_code == 200
