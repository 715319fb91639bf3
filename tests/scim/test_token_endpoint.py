"""The token endpoint of a directory's OAuth client (contract §4.3; RFC 6749 §4.4, §5): what it takes, how it
answers, each error of RFC 6749 §5.2, its throttle, and bad input of every kind (never a 500).

Requests go through the WSGI application granian serves (tests/scim/conftest.py `OAuth`)."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adminauth.models import LoginFailure
from directories.models import Directory
from directories.services import directory_create, directory_update
from tests.actors import TEST_ACTOR
from tests.scim.conftest import FORM_CT, OAuth, Scim, basic_header, oauth_on

# SCIM_OAUTH_TOKEN_SECONDS, as the tests run (its default).
EXPIRES_IN = 3600

pytestmark = pytest.mark.django_db

GRANT = "grant_type=client_credentials"
WRONG = {
    "error": "invalid_client",
    "error_description": "Client authentication failed: wrong client_id or client_secret.",
}


def posted(oauth: OAuth, secret: str | None = None, client_id: str | None = None) -> str:
    """A client_secret_post body."""
    return (
        f"{GRANT}&client_id={client_id or oauth.client_id}&client_secret={oauth.secret if secret is None else secret}"
    )


def assert_error(answer: tuple[int, dict[str, str], Any], status: int, error: str) -> dict[str, Any]:
    """An RFC 6749 §5.2 error answer: JSON with error and error_description, never cached."""
    got, headers, body = answer
    assert got == status, body
    assert headers["Content-Type"] == "application/json"
    assert set(body) == {"error", "error_description"} and body["error"] == error and body["error_description"]
    assert headers["Cache-Control"] == "no-store" and headers["Pragma"] == "no-cache"
    return body


# --- a token, both ways -------------------------------------------------------------------------------


def test_client_secret_basic_gets_a_bearer_token_for_an_hour_never_cached(oauth_a: OAuth) -> None:
    status, headers, body = oauth_a.post(authorization=oauth_a.basic())
    assert status == 200
    assert set(body) == {"access_token", "token_type", "expires_in"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == EXPIRES_IN == 3600
    assert headers["Content-Type"] == "application/json"
    assert headers["Cache-Control"] == "no-store" and headers["Pragma"] == "no-cache"
    assert headers["X-Request-Id"]
    assert Scim(oauth_a.directory, secret=body["access_token"]).get("/Users")[0] == 200


def test_client_secret_post_gets_a_token_too(oauth_a: OAuth) -> None:
    status, _headers, body = oauth_a.post(posted(oauth_a))
    assert status == 200 and body["token_type"] == "Bearer"
    assert Scim(oauth_a.directory, secret=body["access_token"]).get("/Groups")[0] == 200


def test_each_grant_gives_another_token_and_every_one_works(oauth_a: OAuth) -> None:
    tokens = {oauth_a.token() for _ in range(3)}
    assert len(tokens) == 3
    assert all(Scim(oauth_a.directory, secret=t).get("/Users")[0] == 200 for t in tokens)


def test_basic_credentials_are_form_decoded_and_the_scheme_is_case_insensitive(oauth_a: OAuth) -> None:
    # RFC 6749 §2.3.1: each part form-urlencoded before base64; an escaped id is the same id.
    escaped = "".join(f"%{b:02X}" for b in oauth_a.client_id.encode())
    raw = f"{escaped}:{oauth_a.secret}".encode()
    assert oauth_a.post(authorization="bAsIc " + base64.b64encode(raw).decode())[0] == 200


def test_a_charset_parameter_of_utf_8_and_unknown_parameters_are_accepted(oauth_a: OAuth) -> None:
    body = posted(oauth_a) + "&resource=https%3A%2F%2Fexample.com&audience=x"
    assert oauth_a.post(body, content_type=f"{FORM_CT}; charset=UTF-8")[0] == 200


def test_a_basic_client_may_name_itself_in_the_form_too_when_it_is_the_same(oauth_a: OAuth) -> None:
    status, _h, _b = oauth_a.post(f"{GRANT}&client_id={oauth_a.client_id}", authorization=oauth_a.basic())
    assert status == 200
    assert_error(
        oauth_a.post(f"{GRANT}&client_id={uuid.uuid4()}", authorization=oauth_a.basic()), 400, "invalid_request"
    )


def test_a_trailing_slash_is_the_same_endpoint(oauth_a: OAuth) -> None:
    assert oauth_a.post(authorization=oauth_a.basic(), path=oauth_a.path + "/")[0] == 200


# --- scope (RFC 6749 §3.3) ----------------------------------------------------------------------------


def test_the_one_scope_is_granted_and_said_only_when_it_differs_from_the_one_asked(oauth_a: OAuth) -> None:
    assert "scope" not in oauth_a.grant(body=f"{GRANT}&scope=scim")
    assert "scope" not in oauth_a.grant(body=f"{GRANT}&scope=")  # a parameter without a value is absent
    granted = oauth_a.grant(body=f"{GRANT}&scope=users.read+groups.write")
    assert granted["scope"] == "scim"
    assert Scim(oauth_a.directory, secret=granted["access_token"]).get("/Users")[0] == 200


@pytest.mark.parametrize("scope", ['a"b', "a\\b", "a%20%20b", "%20a", "a%09b", "x" * 1100])
def test_a_scope_outside_the_rfc_syntax_is_invalid_scope(oauth_a: OAuth, scope: str) -> None:
    assert_error(oauth_a.post(f"{GRANT}&scope={scope}", authorization=oauth_a.basic()), 400, "invalid_scope")


# --- each error of RFC 6749 §5.2 ------------------------------------------------------------------------


def test_a_wrong_client_is_one_401_invalid_client_with_a_basic_challenge(
    oauth_a: OAuth, oauth_b: OAuth, directory_a: Directory
) -> None:
    """Wrong secret, another directory's client, an unknown directory, a directory id that is not one, a
    directory without OAuth: the same bytes, so the answer tells nothing about what exists."""
    off = directory_create(actor=TEST_ACTOR, data={"tenant": "initech", "product": "crm"})
    answers = [
        oauth_a.post(authorization=oauth_a.basic(secret="w" * 43)),
        oauth_a.post(posted(oauth_a, secret="w" * 43)),
        oauth_a.post(authorization=oauth_b.basic()),
        oauth_a.post(authorization=oauth_a.basic(client_id=oauth_b.client_id)),
        oauth_a.post(authorization=oauth_a.basic(client_id=str(uuid.uuid4()))),
        OAuth(off, "").post(authorization=basic_header(str(off.id), oauth_a.secret)),
        oauth_a.post(authorization=oauth_a.basic(), path=f"/api/scim/v2.0/{uuid.uuid4()}/oauth/token"),
        oauth_a.post(authorization=oauth_a.basic(), path="/api/scim/v2.0/not-an-id/oauth/token"),
    ]
    for answer in answers:
        assert_error(answer, 401, "invalid_client")
        assert answer[2] == WRONG
        assert answer[1]["WWW-Authenticate"] == 'Basic realm="Roster SCIM token endpoint"'
    assert not Directory.objects.get(pk=off.pk).scim_oauth_enabled


def test_no_client_credentials_at_all_is_invalid_client(oauth_a: OAuth) -> None:
    for answer in (
        oauth_a.post(),
        oauth_a.post(f"{GRANT}&client_id={oauth_a.client_id}"),
        oauth_a.post(f"{GRANT}&client_secret={oauth_a.secret}"),
        oauth_a.post(authorization=f"Bearer {oauth_a.secret}"),  # not client authentication
    ):
        body = assert_error(answer, 401, "invalid_client")
        assert answer[1]["WWW-Authenticate"].startswith("Basic ")
        assert "send client_id and client_secret" in body["error_description"]
    # Nothing was tried, so nothing counts against the address.
    assert not LoginFailure.objects.exists()


@pytest.mark.parametrize(
    "header",
    [
        "Basic",
        "Basic !!!",
        "Basic " + base64.b64encode(b"no-colon-here").decode(),
        "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(),  # not UTF-8
        "Basic " + base64.b64encode(b"%zz:secret").decode(),  # a broken escape
        "Basic " + base64.b64encode(b"id:sec%00ret").decode(),  # a NUL
        "Basic " + "é" * 10,
        "Basic " + "A" * 6000,  # (past 8190 bytes the request limits answer first: config/requestlimits.py)
    ],
)
def test_basic_credentials_that_cannot_be_read_are_invalid_client_and_count(oauth_a: OAuth, header: str) -> None:
    body = assert_error(oauth_a.post(authorization=header), 401, "invalid_client")
    assert "Basic" in body["error_description"]
    assert LoginFailure.objects.filter(scope="scim-oauth").count() == 1


def test_both_ways_at_once_is_invalid_request(oauth_a: OAuth) -> None:
    answer = oauth_a.post(posted(oauth_a), authorization=oauth_a.basic())
    body = assert_error(answer, 400, "invalid_request")
    assert "one way" in body["error_description"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("", "invalid_request"),
        ("grant_type=", "invalid_request"),
        ("client_id=x", "invalid_request"),
        ("grant_type=password&username=u&password=p", "unsupported_grant_type"),
        ("grant_type=authorization_code&code=x", "unsupported_grant_type"),
        ("grant_type=refresh_token&refresh_token=x", "unsupported_grant_type"),
        ("grant_type=CLIENT_CREDENTIALS", "unsupported_grant_type"),
        ("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", "unsupported_grant_type"),
    ],
)
def test_a_missing_or_other_grant_type_is_refused(oauth_a: OAuth, body: str, error: str) -> None:
    assert_error(oauth_a.post(body, authorization=oauth_a.basic()), 400, error)
    assert_error(oauth_a.post(body), 400, error)  # before the client is authenticated: it tells nothing


@pytest.mark.parametrize(
    "body",
    [
        f"{GRANT}&{GRANT}",
        f"{GRANT}&grant_type=password",
        f"{GRANT}&grant_type=",
        f"{GRANT}&client_id=a&client_id=a",
        f"{GRANT}&scope=scim&scope=scim",
        f"{GRANT}&grant%5Ftype=client_credentials",  # the same name once decoded
    ],
)
def test_a_parameter_sent_twice_is_invalid_request(oauth_a: OAuth, body: str) -> None:
    answer = assert_error(oauth_a.post(body, authorization=oauth_a.basic()), 400, "invalid_request")
    assert "more than once" in answer["error_description"]


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "text/plain", "", "multipart/form-data; boundary=x", f"{FORM_CT}; charset=iso-8859-1"],
)
def test_a_body_that_is_not_a_utf_8_form_is_invalid_request(oauth_a: OAuth, content_type: str) -> None:
    body = b'{"grant_type": "client_credentials"}' if content_type == "application/json" else GRANT.encode()
    answer = assert_error(
        oauth_a.post(body, content_type=content_type, authorization=oauth_a.basic()), 400, "invalid_request"
    )
    assert FORM_CT in answer["error_description"]


@pytest.mark.parametrize(
    "body",
    [
        b"grant_type=client%ZZcredentials",
        b"grant_type=client_credentials&x=%",
        b"grant_type=client_credentials&x=%4",
        b"grant_type=client_credentials&x=%FF%FE",  # escaped bytes that are not UTF-8
        b"grant_type=client_credentials&x=%00",  # NUL
        b"grant_type=client_credentials&x=\xc3\xa9",  # a byte outside ASCII, not escaped
        b"grant_type=client_credentials&x=%ED%A0%80",  # an escaped surrogate
    ],
)
def test_a_body_that_is_not_clean_form_encoding_is_invalid_request(oauth_a: OAuth, body: bytes) -> None:
    assert_error(oauth_a.post(body, authorization=oauth_a.basic()), 400, "invalid_request")


def test_a_body_over_the_limit_is_refused_unread(oauth_a: OAuth) -> None:
    huge = GRANT.encode() + b"&x=" + b"a" * (64 * 1024)
    assert_error(oauth_a.post(huge, authorization=oauth_a.basic()), 413, "invalid_request")
    # A Content-Length that says more than arrives is refused by its size alone, the body never read.
    answer = oauth_a.post(GRANT, authorization=oauth_a.basic(), CONTENT_LENGTH=str(10**12))
    assert_error(answer, 413, "invalid_request")


def test_too_many_parameters_is_invalid_request(oauth_a: OAuth) -> None:
    body = GRANT + "".join(f"&p{i}=v" for i in range(100))
    assert_error(oauth_a.post(body, authorization=oauth_a.basic()), 400, "invalid_request")


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
def test_other_methods_are_405_with_allow_post(oauth_a: OAuth, method: str) -> None:
    status, headers, body = oauth_a.post(GRANT, method=method, authorization=oauth_a.basic())
    assert status == 405 and headers["Allow"] == "POST"
    if method != "HEAD":
        assert body["error"] == "invalid_request" and headers["Content-Type"] == "application/json"


def test_paths_beside_the_token_endpoint_are_scim_paths(oauth_a: OAuth) -> None:
    """Only `oauth/token` itself is the token endpoint; anything else under the directory is SCIM's 404
    (after authentication, as any SCIM request)."""
    base = f"/api/scim/v2.0/{oauth_a.directory.id}"
    scim = Scim(oauth_a.directory)
    for path in ("/oauth", "/oauth/tokens", "/OAuth/token", "/oauth/token/x"):
        assert scim.get(path)[0] == 404, path
        assert scim.last["Content-Type"] == "application/scim+json"
    status, headers, _body = oauth_a.post(path=base + "/oauth/authorize", authorization=oauth_a.basic())
    assert status == 401 and headers["Content-Type"] == "application/scim+json"  # a SCIM answer, not OAuth's


def test_a_deactivated_directory_gets_no_token(oauth_a: OAuth) -> None:
    directory_update(actor=TEST_ACTOR, directory=oauth_a.directory, data={"deactivated": True})
    body = assert_error(oauth_a.post(authorization=oauth_a.basic()), 403, "unauthorized_client")
    assert "deactivated" in body["error_description"]
    # A wrong secret is still the 401 of any wrong secret: nothing is said to a stranger.
    assert oauth_a.post(authorization=oauth_a.basic(secret="w" * 43))[2] == WRONG


def test_the_django_handler_answers_the_same(oauth_a: OAuth) -> None:
    """The fallback entry (scim.http.views.scim_view) gives the token endpoint's answer too."""
    from django.test import Client

    response = Client(HTTP_AUTHORIZATION=oauth_a.basic()).post(oauth_a.path, GRANT, content_type=FORM_CT)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "no-store" and response.json()["token_type"] == "Bearer"
    wrong = Client().post(oauth_a.path, posted(oauth_a, secret="x"), content_type=FORM_CT)
    assert wrong.status_code == 401 and wrong.json() == WRONG


# --- the throttle (adminauth.throttle, scope scim-oauth) --------------------------------------------------


def test_an_address_that_keeps_guessing_is_refused_then_even_with_the_right_secret(
    oauth_a: OAuth, oauth_b: OAuth, settings: Any
) -> None:
    settings.ADMIN_LOGIN_MAX_FAILURES = 3
    for _ in range(3):
        assert oauth_a.post(authorization=oauth_a.basic(secret="guess"), remote="203.0.113.9")[0] == 401
    answer = oauth_a.post(authorization=oauth_a.basic(), remote="203.0.113.9")
    body = assert_error(answer, 429, "temporarily_unavailable")
    assert int(answer[1]["Retry-After"]) > 0 and "retry" in body["error_description"]
    # Other directories too, from that address: the budget is the address's.
    assert oauth_b.post(authorization=oauth_b.basic(), remote="203.0.113.9")[0] == 429
    # Another address is not affected, nor is SCIM itself.
    assert oauth_a.post(authorization=oauth_a.basic(), remote="203.0.113.10")[0] == 200
    assert Scim(oauth_a.directory).get("/Users")[0] == 200
    # The admin surfaces' budget is their own.
    assert not LoginFailure.objects.filter(scope="admin").exists()


def test_a_directory_guessed_at_from_many_addresses_is_refused_for_a_while(
    oauth_a: OAuth, oauth_b: OAuth, settings: Any
) -> None:
    settings.SCIM_OAUTH_MAX_FAILURES_PER_DIRECTORY = 4
    for i in range(4):
        assert oauth_a.post(authorization=oauth_a.basic(secret="guess"), remote=f"198.51.100.{i}")[0] == 401
    assert oauth_a.post(authorization=oauth_a.basic(), remote="198.51.100.200")[0] == 429
    assert oauth_b.post(authorization=oauth_b.basic(), remote="198.51.100.200")[0] == 200
    # Tokens issued before, and the static secret, keep working: only the token endpoint waits.
    assert Scim(oauth_a.directory).get("/Users")[0] == 200


def test_a_success_forgets_the_address_s_earlier_failures(oauth_a: OAuth, settings: Any) -> None:
    settings.ADMIN_LOGIN_MAX_FAILURES = 3
    for _ in range(2):
        oauth_a.post(authorization=oauth_a.basic(secret="typo"), remote="192.0.2.7")
    assert oauth_a.post(authorization=oauth_a.basic(), remote="192.0.2.7")[0] == 200
    for _ in range(2):
        oauth_a.post(authorization=oauth_a.basic(secret="typo"), remote="192.0.2.7")
    assert oauth_a.post(authorization=oauth_a.basic(), remote="192.0.2.7")[0] == 200


# --- bad input of every kind: never a 500 ---------------------------------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_BYTES = st.binary(max_size=200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(_BYTES, _TEXT.map(lambda t: t.encode("utf-8", "surrogatepass"))),
    header=st.one_of(st.none(), _TEXT, _BYTES.map(lambda b: "Basic " + base64.b64encode(b).decode())),
    content_type=st.sampled_from([FORM_CT, f"{FORM_CT}; charset=utf-8", "application/json", "", "text/plain;;"]),
)
def test_no_input_makes_the_endpoint_fail(oauth_a: OAuth, body: bytes, header: str | None, content_type: str) -> None:
    header = None if header is None else header.encode("latin-1", "replace").decode("latin-1")
    status, headers, answer = oauth_a.post(body, authorization=header, content_type=content_type)
    assert status in (200, 400, 401, 429), answer
    assert headers["Content-Type"] == "application/json"
    assert ("access_token" in answer) if status == 200 else set(answer) == {"error", "error_description"}


def test_a_directory_created_after_oauth_of_another_is_off_until_its_own_secret(directory_a: Directory) -> None:
    oauth = oauth_on(directory_a)
    assert oauth.post(authorization=oauth.basic())[0] == 200
    other = directory_create(actor=TEST_ACTOR, data={"tenant": "x", "product": "y"})
    assert OAuth(other, oauth.secret).post(authorization=basic_header(str(other.id), oauth.secret))[2] == WRONG


def test_oauthlib_logs_neither_the_form_nor_the_token_even_at_debug(
    oauth_a: OAuth, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grant runs on oauthlib, whose DEBUG lines carry the token it issued: its logger is held at
    WARNING (config/settings.py), whatever level the rest logs at (LOG_LEVEL=DEBUG here)."""
    import logging

    from oauthlib.oauth2.rfc6749.grant_types import client_credentials

    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.DEBUG)
    assert not client_credentials.log.isEnabledFor(logging.DEBUG)
    with caplog.at_level(logging.DEBUG):
        token = oauth_a.token()
    assert token and not [r for r in caplog.records if r.name.startswith("oauthlib")]
    assert token not in caplog.text and oauth_a.secret not in caplog.text
