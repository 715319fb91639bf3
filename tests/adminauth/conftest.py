"""Admin personas: a configured root token, a logged-in admin and its credentials."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client

ROOT = "root-token-for-tests-0123456789abcdef"
LOGIN = "/auditlog/admin/v1/user/_login"


@dataclass
class AdminSession:
    body: dict

    @property
    def user_id(self) -> str:
        return self.body["user"]["id"]

    @property
    def token_header(self) -> str:
        t = self.body["adminToken"]
        return f"id={t['id']} token={t['token']} admin_token={ROOT}"

    @property
    def bearer_header(self) -> str:
        return f"Bearer {self.body['token']}"

    def client(self, *, bearer: bool = False) -> Client:
        return Client(HTTP_AUTHORIZATION=self.bearer_header if bearer else self.token_header)


@pytest.fixture
def root(settings) -> str:  # noqa: ANN001
    settings.ADMIN_ROOT_TOKEN = ROOT
    return ROOT


def login(email: str = "ops@example.com", *, root_token: str = ROOT, **extra) -> object:  # noqa: ANN003
    return Client().post(
        LOGIN,
        {"claims": {"upstreamToken": "upstream-xyz", "email": email}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"token={root_token}",
        **extra,
    )


@pytest.fixture
def admin_session(root, db) -> AdminSession:  # noqa: ANN001
    response = login()
    assert response.status_code == 200, response.content
    return AdminSession(response.json())


@pytest.fixture
def admin_client(admin_session: AdminSession) -> Client:
    return admin_session.client()
