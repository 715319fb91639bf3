"""`manage.py apikey create | list | revoke`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from directories.models import ApiKey, api_key_hash

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("apikey", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_prints_the_key_once_and_stores_only_its_hash(directory_a) -> None:  # noqa: ANN001
    out, err = run("create", "--name", "billing app")
    key = out.strip()
    assert key.startswith("rk_") and len(key) >= 40
    row = ApiKey.objects.get()
    assert row.name == "billing app"
    assert row.key_hash == api_key_hash(key)
    assert key not in (row.key_hash, row.prefix)
    assert "only time" in err and key not in err
    # The printed key works on the REST API.
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get(f"/api/v1/directory-sync/{directory_a.id}")
    assert response.status_code == 200


def test_create_requires_a_name() -> None:
    with pytest.raises(CommandError):
        run("create")
    with pytest.raises(CommandError, match="name is required"):
        run("create", "--name", "   ")
    assert ApiKey.objects.count() == 0


def test_list_shows_name_prefix_and_dates_but_never_the_key() -> None:
    key_one = run("create", "--name", "one")[0].strip()
    key_two = run("create", "--name", "two")[0].strip()
    run("revoke", key_two[:10])
    out, _ = run("list")
    lines = out.strip().splitlines()
    assert lines[0].split() == ["ID", "NAME", "PREFIX", "CREATED", "REVOKED"]
    assert "one" in lines[1] and key_one[:10] in lines[1] and lines[1].rstrip().endswith("-")
    assert "two" in lines[2] and key_two[:10] in lines[2] and not lines[2].rstrip().endswith("-")
    assert key_one not in out and key_two not in out


def test_list_with_no_keys_says_so() -> None:
    assert "No API keys" in run("list")[0]


@pytest.mark.parametrize("ref_kind", ["id", "prefix", "short-prefix", "key"])
def test_revoke_by_id_prefix_or_key_stops_the_key(directory_a, ref_kind: str) -> None:  # noqa: ANN001
    key = run("create", "--name", "app")[0].strip()
    row = ApiKey.objects.get()
    ref = {"id": str(row.id), "prefix": row.prefix, "short-prefix": row.prefix[:7], "key": key}[ref_kind]
    out, _ = run("revoke", ref)
    assert "Revoked" in out and key not in out
    assert ApiKey.objects.get().revoked_at is not None
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get(f"/api/v1/directory-sync/{directory_a.id}")
    assert response.status_code == 401


def test_revoke_twice_says_it_was_already_revoked() -> None:
    run("create", "--name", "app")
    row = ApiKey.objects.get()
    run("revoke", str(row.id))
    revoked_at = ApiKey.objects.get().revoked_at
    assert "already revoked" in run("revoke", str(row.id))[0]
    assert ApiKey.objects.get().revoked_at == revoked_at


@pytest.mark.parametrize("ref", ["999", "rk_nothing", "rk_", "", "zzzzzzzzzz"])
def test_revoke_of_an_unknown_or_too_vague_reference_fails_without_revoking(ref: str) -> None:
    run("create", "--name", "app")
    with pytest.raises(CommandError, match="No API key matches"):
        run("revoke", ref)
    assert ApiKey.objects.get().revoked_at is None


def test_revoke_of_an_ambiguous_prefix_fails_without_revoking() -> None:
    # Two keys whose prefixes share their first characters.
    ApiKey.objects.create(name="a", prefix="rk_abcdefg", key_hash="1" * 64)
    ApiKey.objects.create(name="b", prefix="rk_abcdxyz", key_hash="2" * 64)
    with pytest.raises(CommandError, match="several keys"):
        run("revoke", "rk_abcd")
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()
