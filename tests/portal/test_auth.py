"""Sign in and out: credentials, throttling, CSRF, safe redirects, session handling."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from adminauth.models import AdminUser, LoginFailure
from adminauth.throttle import max_failures, max_failures_per_email, window
from audit.models import AuditEntry
from tests.portal.conftest import ADMIN_EMAIL, ADMIN_PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/portal/login"


def sign_in(client: Client, email: str = ADMIN_EMAIL, password: str = ADMIN_PASSWORD, **extra: str):  # noqa: ANN201
    return client.post(LOGIN, {"email": email, "password": password, **extra})


def test_login_page_renders_a_form_with_csrf_token(client: Client) -> None:
    response = client.get(LOGIN)
    assert response.status_code == 200
    assert b'name="csrfmiddlewaretoken"' in response.content
    assert b'type="password"' in response.content
    assert response.headers["Cache-Control"].startswith("max-age=0")


def test_sign_in_with_right_password_starts_a_session_and_goes_to_directories(
    client: Client, admin_user: AdminUser
) -> None:
    response = sign_in(client)
    assert response.status_code == 302
    assert response.headers["Location"] == "/portal/"
    assert client.get("/portal/").status_code == 200
    assert client.session["_auth_user_id"] == str(admin_user.pk)


def test_sign_in_email_is_case_insensitive(client: Client, admin_user: AdminUser) -> None:
    assert sign_in(client, email="  OPS@Example.COM ").status_code == 302


def test_sign_in_is_audited_once_with_the_portal_as_origin(client: Client, admin_user: AdminUser) -> None:
    sign_in(client)
    entries = AuditEntry.objects.filter(action="admin.login", actor=admin_user)
    assert entries.count() == 1
    assert entries.get().details == {"via": "portal", "actor": "ops@example.com"}


def test_wrong_password_is_refused_with_one_generic_message(client: Client, admin_user: AdminUser) -> None:
    response = sign_in(client, password="nope")
    assert response.status_code == 400
    assert b"Email or password is incorrect." in response.content
    assert "_auth_user_id" not in client.session
    assert LoginFailure.objects.filter(email_key=ADMIN_EMAIL).count() == 1


def test_unknown_email_gets_the_same_message_as_a_wrong_password(client: Client, admin_user: AdminUser) -> None:
    response = sign_in(client, email="nobody@example.com", password="x")
    assert response.status_code == 400
    assert b"Email or password is incorrect." in response.content


def test_empty_fields_are_reported_next_to_each_field(client: Client) -> None:
    response = client.post(LOGIN, {"email": "", "password": ""})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="id_email-error"' in html
    assert 'id="id_password-error"' in html
    assert LoginFailure.objects.count() == 0


def test_disabled_admin_cannot_sign_in(client: Client, admin_user: AdminUser) -> None:
    admin_user.is_active = False
    admin_user.save()
    assert sign_in(client).status_code == 400


def test_admin_without_password_cannot_sign_in(client: Client) -> None:
    AdminUser.objects.create_user("api-only@example.com")  # made by the admin API's _login: no password
    assert sign_in(client, email="api-only@example.com", password="").status_code == 400
    assert sign_in(client, email="api-only@example.com", password="anything").status_code == 400


def test_repeated_failures_lock_the_email_even_for_the_right_password(client: Client, admin_user: AdminUser) -> None:
    for _ in range(max_failures_per_email()):
        assert sign_in(client, password="wrong").status_code == 400
    response = sign_in(client)
    assert response.status_code == 429
    assert b"Too many failed sign-in attempts" in response.content
    assert "_auth_user_id" not in client.session


def test_lockout_ends_once_the_failures_are_old(client: Client, admin_user: AdminUser) -> None:
    for _ in range(max_failures_per_email()):
        sign_in(client, password="wrong")
    assert sign_in(client).status_code == 429
    LoginFailure.objects.update(created_at=timezone.now() - window() - timedelta(minutes=1))
    assert sign_in(client).status_code == 302


def test_lockout_of_one_email_does_not_block_another_admin(client: Client, admin_user: AdminUser) -> None:
    AdminUser.objects.create_user("other@example.com", "other-password")
    for _ in range(max_failures_per_email()):
        sign_in(client, password="wrong")
    assert sign_in(Client(), email="other@example.com", password="other-password").status_code == 302


def test_one_address_spraying_many_emails_is_locked(client: Client, admin_user: AdminUser) -> None:
    for i in range(max_failures()):
        sign_in(client, email=f"guess{i}@example.com", password="x")
    assert sign_in(client).status_code == 429
    # Another address is not affected.
    assert sign_in(Client(REMOTE_ADDR="198.51.100.7")).status_code == 302


def test_success_forgives_earlier_failures_of_that_email(client: Client, admin_user: AdminUser) -> None:
    for _ in range(max_failures_per_email() - 1):
        sign_in(client, password="wrong")
    assert sign_in(client).status_code == 302
    assert LoginFailure.objects.filter(email_key=ADMIN_EMAIL).count() == 0


def test_sign_in_follows_a_local_next_and_ignores_an_external_one(client: Client, admin_user: AdminUser) -> None:
    assert sign_in(client, next="/portal/audit").headers["Location"] == "/portal/audit"
    other = Client()
    assert sign_in(other, next="https://evil.example/phish").headers["Location"] == "/portal/"
    assert sign_in(Client(), next="//evil.example/").headers["Location"] == "/portal/"


def test_sign_in_form_is_csrf_protected(admin_user: AdminUser) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(LOGIN, {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    assert response.status_code == 403
    # With the token from the form it works.
    client.get(LOGIN)
    token = client.cookies["csrftoken"].value
    response = client.post(LOGIN, {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD, "csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_sign_in_rotates_the_session_key(client: Client, admin_user: AdminUser) -> None:
    client.get(LOGIN)
    session = client.session
    session["probe"] = 1
    session.save()
    before = client.cookies["sessionid"].value
    sign_in(client)
    assert client.cookies["sessionid"].value != before


def test_sign_out_needs_post_and_ends_the_session(portal_client: Client, admin_user: AdminUser) -> None:
    assert portal_client.get("/portal/logout").status_code == 405
    assert portal_client.get("/portal/").status_code == 200
    response = portal_client.post("/portal/logout")
    assert response.status_code == 302
    assert response.headers["Location"] == "/portal/login"
    assert portal_client.get("/portal/").status_code == 302
    assert AuditEntry.objects.filter(action="admin.logout", actor=admin_user).count() == 1


def test_sign_out_is_csrf_protected(admin_user: AdminUser) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post("/portal/logout").status_code == 403
    assert client.get("/portal/").status_code == 200


def test_signed_in_admin_visiting_login_goes_to_the_portal(portal_client: Client) -> None:
    assert portal_client.get(LOGIN).headers["Location"] == "/portal/"


def test_client_address_behind_a_trusted_proxy_feeds_throttle_and_audit(
    client: Client,
    admin_user: AdminUser,
    settings,  # noqa: ANN001
) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = {"HTTP_X_FORWARDED_FOR": "203.0.113.50"}
    client.post(LOGIN, {"email": ADMIN_EMAIL, "password": "wrong"}, **proxy)
    assert LoginFailure.objects.get().client_ip == "203.0.113.50"
    client.post(LOGIN, {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}, **proxy)
    assert AuditEntry.objects.get(action="admin.login").client_ip == "203.0.113.50"


def test_admin_api_and_portal_failures_count_against_one_budget(
    client: Client, admin_user: AdminUser, settings
) -> None:  # noqa: ANN001
    """One throttle for both surfaces: bad admin-API tokens from an address use up the same budget as its
    failed portal sign-ins, so an attacker does not get a second budget by switching surface."""
    from adminauth.throttle import failure_record

    settings.ADMIN_LOGIN_MAX_FAILURES = 3
    for _ in range(2):
        failure_record(ip="127.0.0.1")  # what the admin API records for a wrong token from this address
    assert sign_in(client, email="nobody@example.com", password="x").status_code == 400
    assert sign_in(client).status_code == 429
