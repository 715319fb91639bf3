"""Behaviour that only shows with several database connections at once (web workers).

Run on PostgreSQL (CI does); SQLite's single writer serialises the threads into a different test.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test import Client

from adminauth.models import AdminToken, AdminUser, LoginFailure
from tests.adminauth.conftest import ROOT, login

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL's concurrent writers"),
]


def _in_threads(n: int, work) -> list:  # noqa: ANN001
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_simultaneous_first_logins_create_one_admin(settings) -> None:  # noqa: ANN001
    settings.ADMIN_ROOT_TOKEN = ROOT
    statuses = _in_threads(4, lambda: login("race@example.com").status_code)
    assert statuses == [200] * 4
    assert AdminUser.objects.filter(email_key="race@example.com").count() == 1
    assert AdminToken.objects.count() == 4


def test_failures_from_parallel_connections_add_up_to_one_throttle(settings) -> None:  # noqa: ANN001
    settings.ADMIN_ROOT_TOKEN = ROOT
    settings.ADMIN_LOGIN_MAX_FAILURES = 4
    statuses = _in_threads(4, lambda: login(root_token="wrong").status_code)
    assert statuses == [401] * 4
    assert LoginFailure.objects.count() == 4
    # Each request ran on its own connection, as in separate workers; together they throttle.
    response = Client().post(
        "/auditlog/admin/v1/user/_login",
        {"claims": {"email": "ops@example.com"}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"token={ROOT}",
    )
    assert response.status_code == 429
