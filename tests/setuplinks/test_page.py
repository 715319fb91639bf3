"""The setup page /setup/<token> (contract §3.1): what it shows, what it refuses, its forms, its headers."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from adminauth.models import LoginFailure
from audit.models import AuditEntry
from directories.models import Directory, ScimHealth
from setuplinks.models import SetupLink
from tests.scim.conftest import Scim, user_body
from tests.setuplinks.conftest import csrf_of, expire, make_link

pytestmark = pytest.mark.django_db
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Robots-Tag": "noindex",
}


def assert_setup_headers(response: Any, frame_ancestors: str = "'none'") -> None:
    for name, value in HEADERS.items():
        assert response[name] == value, (name, response.status_code)
    csp = response["Content-Security-Policy"]
    assert csp.endswith(f"frame-ancestors {frame_ancestors}"), csp
    assert "form-action 'self'" in csp and "default-src 'none'" in csp
    assert not response.has_header("X-Frame-Options"), response.status_code


def _body_without_request_id(response: Any) -> tuple[int, bytes, list[tuple[str, str]]]:
    headers = sorted((k, v) for k, v in response.headers.items() if k != "X-Request-Id")
    return response.status_code, response.content, headers


# --- refusals -------------------------------------------------------------------------------------------


def test_unknown_expired_and_revoked_tokens_answer_the_same_404(directory_a: Directory) -> None:
    expired, expired_token = make_link(directory_a)
    expire(expired)
    revoked, revoked_token = make_link(directory_a)
    SetupLink.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    unknown_token = "x" * 43
    answers = [
        _body_without_request_id(Client().get(f"/setup/{token}"))
        for token in (unknown_token, expired_token, revoked_token, "short", "not%20a%20token")
    ]
    assert answers[0][0] == 404
    assert all(answer == answers[0] for answer in answers), "the 404s differ"
    assert b"does not work" in answers[0][1]
    # What could tell them apart is not in the page: no token, no name, no date.
    for token in (expired_token, revoked_token):
        assert token.encode() not in answers[0][1]
    assert directory_a.name.encode() not in answers[0][1]


def test_a_link_to_a_deactivated_directory_answers_410(directory_a: Directory) -> None:
    _link, token = make_link(directory_a)
    expired, expired_token = make_link(directory_a)
    expire(expired)
    directory_a.deactivated = True
    directory_a.save()
    response = Client().get(f"/setup/{token}")
    assert response.status_code == 410
    assert b"deactivated" in response.content and directory_a.name.encode() not in response.content
    assert_setup_headers(response)
    # An expired link stays a 404: the deactivation tells nothing about a dead link.
    assert Client().get(f"/setup/{expired_token}").status_code == 404
    # Every route of the link is refused the same way.
    assert Client().get(f"/setup/{token}/status").status_code == 410
    assert Client().post(f"/setup/{token}/secret").status_code in (403, 410)  # CSRF first without a token


def test_every_answer_under_setup_carries_the_security_headers(directory_a: Directory, settings) -> None:  # noqa: ANN001
    settings.ADMIN_LOGIN_MAX_FAILURES = 50
    link, token = make_link(directory_a, allow_mapping=True)
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(f"/setup/{token}")
    answers = {
        "page": page,
        "head": Client().head(f"/setup/{token}"),
        "status": Client().get(f"/setup/{token}/status"),
        "secret": browser.post(f"/setup/{token}/secret", {"csrfmiddlewaretoken": csrf_of(page.content)}),
        "csrf": Client(enforce_csrf_checks=True).post(f"/setup/{token}/secret"),
        "mapping": browser.post(f"/setup/{token}/mapping", {"csrfmiddlewaretoken": csrf_of(page.content), "rows": "0"}),
        "put": Client().put(f"/setup/{token}"),
        "unknown": Client().get(f"/setup/{'y' * 43}"),
        "subpath": Client().post(f"/setup/{token}/nothing-here"),
        "bare": Client().get("/setup"),
        "slash": Client().get("/setup/"),
    }
    expected = {
        "page": 200,
        "head": 200,
        "status": 200,
        "secret": 200,
        "csrf": 403,
        "mapping": 303,
        "put": 405,
        "unknown": 404,
        "subpath": 404,
        "bare": 404,
        "slash": 404,
    }
    assert {name: r.status_code for name, r in answers.items()} == expected
    for response in answers.values():
        assert_setup_headers(response)
    assert b"This form has expired" in answers["csrf"].content
    # The portal keeps Django's frame refusal: only the setup pages are exempted.
    assert Client().get("/portal/login")["X-Frame-Options"] == "DENY"


def test_frame_ancestors_come_from_the_setting(directory_a: Directory, settings) -> None:  # noqa: ANN001
    settings.SETUP_FRAME_ANCESTORS = ("'self'", "https://app.example.com", "https://*.example.org")
    _link, token = make_link(directory_a)
    for response in (Client().get(f"/setup/{token}"), Client().get("/setup/unknown")):
        assert_setup_headers(response, "'self' https://app.example.com https://*.example.org")


def test_a_form_posted_without_its_csrf_token_is_refused_and_changes_nothing(directory_a: Directory) -> None:
    directory_a.attribute_map = {"department": "title"}
    directory_a.save()
    link, token = make_link(directory_a, allow_mapping=True)
    secret = directory_a.scim_secret
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(f"/setup/{token}")
    refused = browser.post(f"/setup/{token}/secret", {"csrfmiddlewaretoken": "forged" * 8})
    assert refused.status_code == 403
    refused = Client(enforce_csrf_checks=True).post(
        f"/setup/{token}/mapping", {"attr-department": "userName", "rows": "0"}
    )
    assert refused.status_code == 403
    directory_a.refresh_from_db()
    assert directory_a.scim_secret == secret and directory_a.attribute_map == {"department": "title"}
    assert not AuditEntry.objects.filter(action="directory.scim_secret_rotated").exists()
    accepted = browser.post(f"/setup/{token}/secret", {"csrfmiddlewaretoken": csrf_of(page.content)})
    assert accepted.status_code == 200


def test_failed_lookups_are_throttled_per_address_and_apart_from_admin_sign_in(
    directory_a: Directory, settings
) -> None:  # noqa: ANN001
    settings.ADMIN_LOGIN_MAX_FAILURES = 3
    _link, token = make_link(directory_a)
    guesser = Client(REMOTE_ADDR="203.0.113.9")
    for i in range(3):
        assert guesser.get(f"/setup/guess{i:040d}").status_code == 404
    throttled = guesser.get(f"/setup/{token}")  # a valid token too, once throttled
    assert throttled.status_code == 429
    assert int(throttled["Retry-After"]) > 0 and b"Too many attempts" in throttled.content
    assert_setup_headers(throttled)
    assert guesser.get(f"/setup/{token}/status").status_code == 429
    assert LoginFailure.objects.filter(client_ip="203.0.113.9", scope="setup-link").count() == 3
    # Another address is not affected, and neither is the admin sign-in of the same address.
    assert Client(REMOTE_ADDR="198.51.100.7").get(f"/setup/{token}").status_code == 200
    from adminauth.throttle import throttle_wait_seconds

    assert throttle_wait_seconds(ip="203.0.113.9") == 0
    assert throttle_wait_seconds(ip="203.0.113.9", scope="setup-link") > 0


def test_a_valid_token_does_not_count_as_a_failure(directory_a: Directory) -> None:
    _link, token = make_link(directory_a)
    for _ in range(5):
        assert Client().get(f"/setup/{token}").status_code == 200
    assert not LoginFailure.objects.exists()


# --- opening --------------------------------------------------------------------------------------------


def test_openings_are_counted_and_the_first_one_is_audited(directory_a: Directory) -> None:
    link, token = make_link(directory_a)
    Client().get(f"/setup/{token}", REMOTE_ADDR="192.0.2.4")
    Client().get(f"/setup/{token}")
    Client().get(f"/setup/{token}/status")  # the script's refresh: not an opening
    link.refresh_from_db()
    assert link.opened_count == 2 and link.last_opened_at is not None
    [entry] = AuditEntry.objects.filter(action="setup_link.opened")
    assert entry.actor is None and entry.details["actor"] == f"setup-link:{link.id}"
    assert entry.directory_id == directory_a.id and entry.client_ip == "192.0.2.4"
    assert entry.target_type == "setup_link" and entry.target_id == str(link.id)


# --- provider choice and the SCIM base URL --------------------------------------------------------------


def _current_provider(html: str) -> str:
    return re.search(r'data-provider="(\w+)" aria-current="true"', html).group(1)


def _base_url(html: str) -> str:
    return re.search(r'<code id="scim-base-url" class="value">([^<]+)</code>', html).group(1)


def test_the_provider_is_preselected_from_the_directory_type(directory_a: Directory, directory_b: Directory) -> None:
    _a, token_a = make_link(directory_a)  # okta-scim-v2
    _b, token_b = make_link(directory_b)  # azure-scim-v2
    okta = Client().get(f"/setup/{token_a}").content.decode()
    entra = Client().get(f"/setup/{token_b}").content.decode()
    assert _current_provider(okta) == "okta" and "Push New Users" in okta
    assert _base_url(okta) == f"http://testserver/api/scim/v2.0/{directory_a.id}"
    assert _current_provider(entra) == "entra" and "Provision on demand" in entra
    assert _base_url(entra) == f"http://testserver/api/scim/v2.0/{directory_b.id}?aadOptscim062020"
    assert "HTTP Header" in okta and "Bearer Authentication" in entra


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("okta", "Push Profile Updates"),
        ("entra", "aadOptscim062020"),
        ("onelogin", "SCIM Provisioner with SAML (SCIM v2 Enterprise)"),
        ("jumpcloud", "Test User Email"),
        ("generic", "/ServiceProviderConfig"),
    ],
)
def test_switching_provider_is_a_plain_link(directory_a: Directory, key: str, words: str) -> None:
    _link, token = make_link(directory_a)
    html = Client().get(f"/setup/{token}", {"provider": key}).content.decode()
    assert _current_provider(html) == key and words in html
    flagged = _base_url(html).endswith("?aadOptscim062020")
    assert flagged is (key == "entra")
    # Every provider is offered, as a link that works without JavaScript.
    for other in ("okta", "entra", "onelogin", "jumpcloud", "generic"):
        assert f'href="/setup/{token}?provider={other}#provider"' in html


def test_an_unknown_provider_falls_back_to_the_directory_type(directory_b: Directory) -> None:
    _link, token = make_link(directory_b)
    html = Client().get(f"/setup/{token}", {"provider": "<script>"}).content.decode()
    assert _current_provider(html) == "entra" and "<script>" not in html


# --- what the page shows and does not ---------------------------------------------------------------------


def test_the_page_shows_nothing_of_the_directory_but_what_setup_needs(
    directory_a: Directory, directory_b: Directory
) -> None:
    directory_a.webhook_url = "https://hooks.example.com/roster"
    directory_a.webhook_secret = "whsec-do-not-show"
    directory_a.save()
    scim = Scim(directory_a)
    assert scim.post("/Users", user_body("ann.secretname@acme.test", title="Chief Secret Officer"))[0] == 201
    assert (
        scim.post(
            "/Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Hidden Team"}
        )[0]
        == 201
    )
    _link, token = make_link(directory_a)
    html = Client().get(f"/setup/{token}").content.decode()
    for hidden in (
        directory_a.scim_secret,
        "whsec-do-not-show",
        "hooks.example.com",
        "ann.secretname",
        "Chief Secret Officer",
        "Hidden Team",
        directory_b.name,
        str(directory_b.id),
        directory_a.tenant,
    ):
        assert hidden not in html, hidden
    assert '<dd id="user-count">1</dd>' in html and '<dd id="group-count">1</dd>' in html


def test_the_status_reads_in_words_with_counts_and_the_last_requests(directory_a: Directory) -> None:
    _link, token = make_link(directory_a)
    assert "Waiting for the first request" in Client().get(f"/setup/{token}").content.decode()
    scim = Scim(directory_a)
    assert scim.post("/Users", user_body("bo@acme.test", password="s3cret-pw"))[0] == 201
    html = Client().get(f"/setup/{token}").content.decode()
    assert '<strong id="state-words">Connected</strong>' in html
    assert '<dd id="user-count">1</dd>' in html
    assert "none yet" not in html  # the last request's time
    # A push that fails is listed with its method, path, status and detail, never its body.
    assert scim.post("/Users", user_body("bo@acme.test", password="s3cret-pw", nickName="Bobby-Body"))[0] == 409
    status = Client().get(f"/setup/{token}/status").content.decode()
    assert 'data-status="409"' in status and '<td data-label="Method">POST</td>' in status
    assert "<code>/Users</code>" in status
    assert "A user with this userName already exists in this directory." in status  # its detail
    assert "s3cret-pw" not in status and "Bobby-Body" not in status
    # A wrong secret turns the status to the words the IT admin can act on.
    wrong = Scim(directory_a, secret="an-old-secret")
    assert wrong.get("/Users")[0] == 401
    html = Client().get(f"/setup/{token}").content.decode()
    assert '<strong id="state-words">Wrong secret</strong>' in html
    assert html.count('class="log-failed"') == 2


def test_the_status_lists_the_last_ten_requests_newest_first(directory_a: Directory) -> None:
    _link, token = make_link(directory_a)
    scim = Scim(directory_a)
    for i in range(12):
        assert scim.get(f"/Users/not-a-user-{i}")[0] == 404
    status = Client().get(f"/setup/{token}/status").content.decode()
    paths = re.findall(r"<code>/Users/not-a-user-(\d+)</code>", status)
    assert paths == [str(i) for i in range(11, 1, -1)]


def test_done_links_to_the_return_url_without_a_referrer(directory_a: Directory) -> None:
    _plain, plain_token = make_link(directory_a)
    _back, back_token = make_link(directory_a, return_url="https://app.example.com/settings?sso=done")
    assert 'id="done"' not in Client().get(f"/setup/{plain_token}").content.decode()
    html = Client().get(f"/setup/{back_token}").content.decode()
    done = re.search(r'<a class="btn btn-primary" id="done" href="([^"]+)" rel="noreferrer">Done</a>', html)
    assert done and done.group(1) == "https://app.example.com/settings?sso=done"


# --- generating the secret ------------------------------------------------------------------------------


def _generate(token: str, provider: str = "") -> tuple[Any, str]:
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(f"/setup/{token}")
    response = browser.post(
        f"/setup/{token}/secret", {"csrfmiddlewaretoken": csrf_of(page.content), "provider": provider}
    )
    secret = re.search(r'<code id="scim-secret" class="value">([^<]+)</code>', response.content.decode())
    return response, secret.group(1) if secret else ""


def test_a_new_secret_is_shown_once_and_the_old_one_stops_when_the_directory_is_not_in_use(
    directory_a: Directory, directory_b: Directory
) -> None:
    link, token = make_link(directory_a)
    old, other = directory_a.scim_secret, directory_b.scim_secret
    response, secret = _generate(token, provider="jumpcloud")
    assert response.status_code == 200 and secret and secret != old
    assert "Token Key" in response.content.decode()  # the provider chosen before stays chosen
    assert "Any previous secret has stopped working." in response.content.decode()
    directory_a.refresh_from_db()
    assert directory_a.scim_secret == secret and directory_a.previous_scim_secret_expires_at is None
    assert Scim(directory_a, secret=old).get("/Users")[0] == 401
    assert Scim(directory_a, secret=secret).get("/Users")[0] == 200
    # Never shown again, and the other directory's secret is untouched.
    assert secret not in Client().get(f"/setup/{token}").content.decode()
    directory_b.refresh_from_db()
    assert directory_b.scim_secret == other
    [entry] = AuditEntry.objects.filter(action="directory.scim_secret_rotated")
    assert entry.details["actor"] == f"setup-link:{link.id}" and entry.details["grace_seconds"] == 0
    assert entry.details["via"] == "setup-link" and entry.directory_id == directory_a.id
    assert secret not in str(entry.details) and old not in str(entry.details)


def test_a_directory_in_use_keeps_its_previous_secret_an_hour(directory_a: Directory) -> None:
    old = directory_a.scim_secret
    assert Scim(directory_a).post("/Users", user_body("in.use@acme.test"))[0] == 201
    _link, token = make_link(directory_a)
    before = timezone.now()
    response, secret = _generate(token)
    assert response.status_code == 200 and 'id="grace"' in response.content.decode()
    assert "keeps working until" in response.content.decode()
    directory_a.refresh_from_db()
    expires = directory_a.previous_scim_secret_expires_at
    assert before + timedelta(seconds=3590) < expires < timezone.now() + timedelta(seconds=3601)
    assert Scim(directory_a, secret=old).get("/Users")[0] == 200
    assert Scim(directory_a, secret=secret).get("/Users")[0] == 200
    assert AuditEntry.objects.get(action="directory.scim_secret_rotated").details["grace_seconds"] == 3600


def test_a_directory_last_used_over_a_day_ago_is_not_in_use(directory_a: Directory) -> None:
    old = directory_a.scim_secret
    ScimHealth.objects.create(
        directory=directory_a,
        state="healthy",
        last_request_at=timezone.now() - timedelta(hours=25),
        last_authenticated_at=timezone.now() - timedelta(hours=25),
    )
    _link, token = make_link(directory_a)
    response, secret = _generate(token)
    assert response.status_code == 200 and secret
    assert Scim(directory_a, secret=old).get("/Users")[0] == 401


def test_a_link_revoked_or_deactivated_after_the_page_loaded_cannot_generate(directory_a: Directory) -> None:
    link, token = make_link(directory_a)
    secret = directory_a.scim_secret
    browser = Client(enforce_csrf_checks=True)
    csrf = csrf_of(browser.get(f"/setup/{token}").content)
    SetupLink.objects.filter(pk=link.pk).update(revoked_at=timezone.now())
    assert browser.post(f"/setup/{token}/secret", {"csrfmiddlewaretoken": csrf}).status_code == 404
    other, other_token = make_link(directory_a)
    csrf = csrf_of(browser.get(f"/setup/{other_token}").content)
    Directory.objects.filter(pk=directory_a.pk).update(deactivated=True)
    assert browser.post(f"/setup/{other_token}/secret", {"csrfmiddlewaretoken": csrf}).status_code == 410
    directory_a.refresh_from_db()
    assert directory_a.scim_secret == secret


def test_the_secret_is_generated_by_post_only(directory_a: Directory) -> None:
    _link, token = make_link(directory_a)
    secret = directory_a.scim_secret
    assert Client().get(f"/setup/{token}/secret").status_code == 405
    directory_a.refresh_from_db()
    assert directory_a.scim_secret == secret


# --- the mapping form -----------------------------------------------------------------------------------


@pytest.fixture
def mapped(directory_a: Directory) -> Directory:
    directory_a.attribute_map = {"department": f"{ENTERPRISE}:department", "employee_id": "externalId"}
    directory_a.role_map = {"Engineering": "developer", "IT Admins": "admin"}
    directory_a.save()
    return directory_a


def _mapping_post(token: str, fields: dict[str, str]) -> Any:
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(f"/setup/{token}")
    return browser.post(f"/setup/{token}/mapping", {"csrfmiddlewaretoken": csrf_of(page.content), **fields})


def test_without_allow_mapping_there_is_no_form_and_no_route(mapped: Directory) -> None:
    _link, token = make_link(mapped)
    html = Client().get(f"/setup/{token}").content.decode()
    assert 'id="mapping"' not in html and "attr-department" not in html
    response = _mapping_post(token, {"attr-department": "title", "rows": "0"})
    assert response.status_code == 404
    mapped.refresh_from_db()
    assert mapped.attribute_map["department"] == f"{ENTERPRISE}:department"


def test_the_mapping_form_offers_the_declared_names_and_roles(mapped: Directory) -> None:
    _link, token = make_link(mapped, allow_mapping=True)
    html = Client().get(f"/setup/{token}").content.decode()
    assert 'name="attr-department"' in html and 'name="attr-employee_id"' in html
    assert 'value="Engineering"' in html and 'value="IT Admins"' in html
    assert '<option value="admin">admin</option>' in html or '<option value="admin" selected>admin</option>' in html
    assert 'name="rows" value="5"' in html  # two rows of the map and three empty ones


def test_saving_the_mapping_changes_paths_and_roles_and_is_audited(mapped: Directory) -> None:
    link, token = make_link(mapped, allow_mapping=True)
    response = _mapping_post(
        token,
        {
            "attr-department": f"{ENTERPRISE}:division",
            "attr-employee_id": f"{ENTERPRISE}:employeeNumber",
            "attr-invented": "title",  # a name the application did not declare: ignored
            "rows": "4",
            "group-0": "Platform Engineers",
            "role-0": "developer",
            "group-1": "",  # cleared: IT Admins is no longer mapped
            "role-1": "admin",
            "group-2": "Okta Admins",
            "role-2": "admin",
            "group-3": "",
            "role-3": "",
        },
    )
    assert response.status_code == 303
    assert response["Location"] == f"/setup/{token}?provider=okta&saved=mapping#mapping"
    mapped.refresh_from_db()
    assert mapped.attribute_map == {
        "department": f"{ENTERPRISE}:division",
        "employee_id": f"{ENTERPRISE}:employeeNumber",
    }
    assert mapped.role_map == {"Platform Engineers": "developer", "Okta Admins": "admin"}
    [entry] = AuditEntry.objects.filter(action="directory.updated")
    assert entry.details["actor"] == f"setup-link:{link.id}" and entry.details["via"] == "setup-link"
    assert sorted(entry.details["fields"]) == ["attribute_map", "role_map"]
    saved = Client().get(response["Location"]).content.decode()
    assert 'id="mapping-saved"' in saved


def test_a_role_whose_last_group_was_removed_can_still_be_chosen(mapped: Directory) -> None:
    _link, token = make_link(mapped, allow_mapping=True)
    fields = {"attr-department": "title", "attr-employee_id": "externalId"}
    response = _mapping_post(token, {**fields, "rows": "1", "group-0": "Engineering", "role-0": "developer"})
    assert response.status_code == 303
    mapped.refresh_from_db()
    assert mapped.role_map == {"Engineering": "developer"}
    html = Client().get(f"/setup/{token}").content.decode()
    assert '<option value="admin">admin</option>' in html


@pytest.mark.parametrize(
    ("fields", "error_field", "message"),
    [
        ({"attr-department": "not a path!", "rows": "0"}, "attr-department", "SCIM attribute path"),
        ({"attr-department": "", "rows": "0"}, "attr-department", "Choose the SCIM attribute"),
        ({"attr-department": "emails[type eq work].value", "rows": "0"}, "attr-department", "SCIM attribute path"),
        ({"rows": "1", "group-0": "Engineering", "role-0": "superuser"}, "role-0", "valid choice"),
        ({"rows": "1", "group-0": "Engineering", "role-0": ""}, "role-0", "Choose one of the roles"),
        (
            {"rows": "2", "group-0": "Engineering", "role-0": "developer", "group-1": "ENGINEERING", "role-1": "admin"},
            "group-1",
            "already mapped",
        ),
        ({"rows": "1", "group-0": "x" * 513, "role-0": "admin"}, "group-0", "at most 512"),
    ],
)
def test_an_invalid_mapping_is_shown_next_to_its_field_and_nothing_is_saved(
    mapped: Directory, fields: dict[str, str], error_field: str, message: str
) -> None:
    _link, token = make_link(mapped, allow_mapping=True)
    before = (dict(mapped.attribute_map), dict(mapped.role_map))
    response = _mapping_post(token, fields)
    assert response.status_code == 400
    html = response.content.decode()
    error = re.search(rf'<p class="field-error" id="id_{error_field}-error">([^<]+)</p>', html)
    assert error, html[html.find('id="mapping"') :][:3000]
    assert message in error.group(1).replace("&#x27;", "'")
    mapped.refresh_from_db()
    assert (mapped.attribute_map, mapped.role_map) == before
    assert not AuditEntry.objects.filter(action="directory.updated").exists()


def test_a_mapping_form_with_nothing_declared_says_so(directory_a: Directory) -> None:
    _link, token = make_link(directory_a, allow_mapping=True)
    html = Client().get(f"/setup/{token}").content.decode()
    assert "The application has declared no attributes or roles to map yet." in html
    assert 'id="save-mapping"' not in html
