"""GET /healthz (directories/health.py): the liveness probe."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.test import Client

from directories import health

pytestmark = pytest.mark.django_db


def test_healthz_answers_ok_when_the_database_answers(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_answers_503_when_the_database_does_not(client: Client, monkeypatch) -> None:  # noqa: ANN001
    class BrokenConnection:
        def cursor(self) -> None:
            raise OperationalError("connection refused to 10.0.0.5:5432 password=hunter2")

    monkeypatch.setattr(health, "connection", BrokenConnection())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert b"10.0.0.5" not in response.content and b"hunter2" not in response.content


def test_healthz_refuses_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
