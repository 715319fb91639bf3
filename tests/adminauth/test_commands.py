"""Ops commands: createadmin (portal password) and admintokens (list, disable)."""

from __future__ import annotations

import io
import sys

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.test import Client

from adminauth.models import AdminToken, AdminUser
from audit.models import AuditEntry
from tests.adminauth.conftest import AdminSession, login

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


class _Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _run(*args: str, stdin: str = "", tty: bool = False, monkeypatch=None) -> str:  # noqa: ANN001
    monkeypatch.setattr(sys, "stdin", _Stdin(stdin, tty))
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_createadmin_from_stdin_sets_a_portal_password(monkeypatch) -> None:  # noqa: ANN001
    out = _run(
        "createadmin", "--email", "Ops@Example.com", "--password-stdin", stdin=PASSWORD + "\n", monkeypatch=monkeypatch
    )
    assert "Created admin Ops@Example.com" in out
    user = AdminUser.objects.get()
    assert user.check_password(PASSWORD)
    assert PASSWORD not in user.password
    # The portal signs in through Django's auth backends with the email in any case.
    assert authenticate(username="ops@example.com", password=PASSWORD) == user
    assert authenticate(username="ops@example.com", password="wrong-password") is None
    entry = AuditEntry.objects.get()
    assert entry.action == "admin.created" and entry.actor is None
    assert PASSWORD not in str(entry.__dict__)


def test_createadmin_prompts_twice_on_a_terminal(monkeypatch) -> None:  # noqa: ANN001
    answers = iter([PASSWORD, PASSWORD])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    _run("createadmin", "--email", "ops@example.com", tty=True, monkeypatch=monkeypatch)
    assert AdminUser.objects.get().check_password(PASSWORD)


def test_createadmin_refuses_mismatched_prompts(monkeypatch) -> None:  # noqa: ANN001
    answers = iter([PASSWORD, PASSWORD + "x"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    with pytest.raises(CommandError, match="do not match"):
        _run("createadmin", "--email", "ops@example.com", tty=True, monkeypatch=monkeypatch)
    assert AdminUser.objects.count() == 0


def test_createadmin_without_terminal_asks_for_password_stdin(monkeypatch) -> None:  # noqa: ANN001
    with pytest.raises(CommandError, match="--password-stdin"):
        _run("createadmin", "--email", "ops@example.com", tty=False, monkeypatch=monkeypatch)


@pytest.mark.parametrize(
    ("email", "password"), [("ops@example.com", "short"), ("ops@example.com", ""), ("nope", PASSWORD)]
)
def test_createadmin_rejects_bad_input(monkeypatch, email: str, password: str) -> None:  # noqa: ANN001
    with pytest.raises(CommandError):
        _run("createadmin", "--email", email, "--password-stdin", stdin=password + "\n", monkeypatch=monkeypatch)
    assert AdminUser.objects.count() == 0
    assert AuditEntry.objects.count() == 0


def test_createadmin_on_an_existing_admin_sets_a_new_password(admin_session: AdminSession, monkeypatch) -> None:  # noqa: ANN001
    out = _run("createadmin", "--email", "OPS@example.com", "--password-stdin", stdin=PASSWORD, monkeypatch=monkeypatch)
    assert "new password" in out
    user = AdminUser.objects.get()
    assert str(user.id) == admin_session.user_id
    assert user.check_password(PASSWORD)


def test_admin_created_by_login_has_no_usable_password(admin_session: AdminSession) -> None:
    assert not AdminUser.objects.get().has_usable_password()


def test_admintokens_disable_by_email_stops_all_tokens_and_jwts(admin_session: AdminSession, root, monkeypatch) -> None:  # noqa: ANN001
    second = login().json()
    other = login("other@example.com").json()
    AuditEntry.objects.all().delete()
    out = _run("admintokens", "disable", "--email", "OPS@example.com", monkeypatch=monkeypatch)
    assert "Disabled 2 token(s)" in out
    for header in (admin_session.token_header, admin_session.bearer_header, f"Bearer {second['token']}"):
        assert Client(HTTP_AUTHORIZATION=header).get("/auditlog/admin/v1/users").status_code == 401
    # Another admin is untouched.
    assert Client(HTTP_AUTHORIZATION=f"Bearer {other['token']}").get("/auditlog/admin/v1/users").status_code == 200
    entry = AuditEntry.objects.get()
    assert entry.action == "token.disabled_all" and entry.details["count"] == 2


def test_admintokens_disable_one_by_id(admin_session: AdminSession, monkeypatch) -> None:  # noqa: ANN001
    token_id = admin_session.body["adminToken"]["id"]
    _run("admintokens", "disable", "--id", token_id, monkeypatch=monkeypatch)
    assert AdminToken.objects.get(pk=token_id).disabled
    out = _run("admintokens", "disable", "--id", token_id, monkeypatch=monkeypatch)
    assert "already disabled" in out
    assert AuditEntry.objects.filter(action="token.disabled").count() == 1


def test_admintokens_errors_are_clear(monkeypatch) -> None:  # noqa: ANN001
    with pytest.raises(CommandError, match="No admin"):
        _run("admintokens", "disable", "--email", "ghost@example.com", monkeypatch=monkeypatch)
    with pytest.raises(CommandError, match="No admin token"):
        _run("admintokens", "disable", "--id", "garbage", monkeypatch=monkeypatch)


def test_admintokens_list_never_prints_secrets(admin_session: AdminSession, monkeypatch) -> None:  # noqa: ANN001
    out = _run("admintokens", "list", monkeypatch=monkeypatch)
    token = admin_session.body["adminToken"]
    assert token["id"] in out and "ops@example.com" in out and "active" in out
    assert token["token"] not in out and token["tokenBcrypt"] not in out
