"""Access tokens of a directory's OAuth client (scim/access_tokens.py): their shape, and what makes one fail."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from directories.models import Directory
from directories.services import directory_scim_oauth_secret_rotate
from scim import access_tokens
from scim.access_tokens import PREFIX, TOKEN_LENGTH, access_token_check, access_token_issue, access_token_valid
from tests.actors import TEST_ACTOR

# SCIM_OAUTH_TOKEN_SECONDS, as the tests run (its default).
EXPIRES_IN = 3600

pytestmark = pytest.mark.django_db

# Now: the secrets these tokens come from expire a year from now.
NOW = int(time.time())


@pytest.fixture
def directory(directory_a: Directory) -> Directory:
    directory, _secret, _first = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory_a)
    return directory


def test_a_token_has_its_own_shape_which_a_scim_secret_never_has(directory: Directory) -> None:
    token = access_token_issue(directory=directory, now=NOW)
    assert token.startswith(PREFIX) and len(token) == TOKEN_LENGTH and access_token_check(token, directory) is True
    assert access_token_check(directory.scim_secret, directory) is None  # 43 url-safe characters, no dot
    assert set(token[len(PREFIX) :]) <= set("0123456789abcdef")  # nothing to escape anywhere


def test_a_token_works_until_its_expiry_and_not_a_second_more(directory: Directory) -> None:
    token = access_token_issue(directory=directory, now=NOW)
    assert access_token_valid(token, directory=directory, now=NOW)
    assert access_token_valid(token, directory=directory, now=NOW + EXPIRES_IN - 1)
    assert not access_token_valid(token, directory=directory, now=NOW + EXPIRES_IN)


def test_the_clock_is_the_module_s_and_moves_for_both(directory: Directory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(access_tokens, "clock", lambda: NOW)
    token = access_token_issue(directory=directory)
    assert access_token_valid(token, directory=directory)
    monkeypatch.setattr(access_tokens, "clock", lambda: NOW + EXPIRES_IN)
    assert not access_token_valid(token, directory=directory)


def test_a_token_is_its_directory_s_only(directory: Directory, directory_b: Directory) -> None:
    other, _s, _f = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory_b)
    token = access_token_issue(directory=directory, now=NOW)
    assert not access_token_valid(token, directory=other, now=NOW)
    assert not access_token_valid(token, directory=None, now=NOW)


def test_a_new_client_secret_ends_every_earlier_token(directory: Directory) -> None:
    token = access_token_issue(directory=directory, now=NOW)
    directory, _secret, first = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory)
    assert not first
    assert not access_token_valid(token, directory=directory, now=NOW)
    assert access_token_valid(access_token_issue(directory=directory, now=NOW), directory=directory, now=NOW)


def test_a_changed_secret_key_ends_every_token(directory: Directory, settings: Any) -> None:
    token = access_token_issue(directory=directory, now=NOW)
    settings.SECRET_KEY = "another-" + "k" * 50
    assert not access_token_valid(token, directory=directory, now=NOW)


def test_a_directory_without_a_client_secret_issues_none_and_accepts_none(directory_b: Directory) -> None:
    with pytest.raises(ValueError, match="no OAuth client secret"):
        access_token_issue(directory=directory_b)
    # A token made for it while it had one fails once the secret is gone (OAuth off).
    directory, _s, _f = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory_b)
    token = access_token_issue(directory=directory, now=NOW)
    directory.scim_oauth_secrets = []
    assert not access_token_valid(token, directory=directory, now=NOW)


def _raw(token: str) -> bytearray:
    return bytearray(bytes.fromhex(token[len(PREFIX) :]))


def _token(raw: bytes) -> str:
    return PREFIX + bytes(raw).hex()


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw.__setitem__(0, 3),  # another version
        lambda raw: raw.__setitem__(slice(1, 17), uuid.uuid4().bytes),  # another directory
        lambda raw: raw.__setitem__(slice(17, 25), (NOW + 10**6).to_bytes(8, "big")),  # a later expiry
        lambda raw: raw.__setitem__(30, raw[30] ^ 1),  # the secret id
        lambda raw: raw.__setitem__(45, raw[45] ^ 1),  # the random part
        lambda raw: raw.__setitem__(-1, raw[-1] ^ 1),  # the MAC
    ],
)
def test_any_change_to_a_token_makes_it_fail(directory: Directory, change: object) -> None:
    raw = _raw(access_token_issue(directory=directory, now=NOW))
    change(raw)  # type: ignore[operator]
    assert not access_token_valid(_token(raw), directory=directory, now=NOW)


@pytest.mark.parametrize(
    "presented",
    [
        PREFIX + "!" * (TOKEN_LENGTH - len(PREFIX)),
        PREFIX + "é" * (TOKEN_LENGTH - len(PREFIX)),
        PREFIX + "\x00" * (TOKEN_LENGTH - len(PREFIX)),
        PREFIX + "A" * (TOKEN_LENGTH - len(PREFIX)),
        PREFIX + "0" * (TOKEN_LENGTH - len(PREFIX)),
        PREFIX + "0 " * ((TOKEN_LENGTH - len(PREFIX)) // 2),
    ],
)
def test_anything_shaped_like_a_token_that_is_not_one_fails_quietly(directory: Directory, presented: str) -> None:
    assert access_token_check(presented, directory) is False  # shaped like a token: checked as one, refused
    assert access_token_valid(presented, directory=directory, now=NOW) is False
