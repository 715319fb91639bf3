"""RowReader / RowWriter (core/rows.py) must be indistinguishable from the ORM they bypass."""

from __future__ import annotations

import time

import pytest

from core.comparison import comparison_key
from core.rows import RowReader, RowWriter
from directories.models import Directory, DirectoryUser
from directories.services import directory_create
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db

users = RowReader(DirectoryUser)
directories = RowReader(Directory)
writer = RowWriter(DirectoryUser)


def _user(directory: Directory, name: str) -> DirectoryUser:
    return DirectoryUser(
        directory=directory,
        user_name=name,
        user_name_key=comparison_key(name),
        raw={"userName": name, "name": {"givenName": "Ä"}, "emails": [{"value": name}]},
        first_name="Ä",
    )


def test_writer_insert_then_reader_give_what_the_orm_reads(settings) -> None:  # noqa: ANN001
    settings.DB_ENCRYPTION_KEY = "a-test-encryption-key-with-entropy"
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "type": "okta-scim-v2"})
    user = _user(directory, "Ann@example.com")
    writer.insert(user)
    assert user.created_at is not None and user.updated_at is not None  # auto_now_add ran on the instance

    sql = users.sql('{table}."directory_id" = %s AND {table}."id" = %s')
    fast = users.first(sql, [users.param("id", directory.id), users.param("id", user.id)])
    slow = DirectoryUser.objects.get(pk=user.pk)
    for field in DirectoryUser._meta.concrete_fields:
        assert getattr(fast, field.attname) == getattr(slow, field.attname), field.name
    assert fast._state.adding is False

    # Secret fields come back decrypted, like through the ORM; the column itself holds ciphertext.
    got = directories.first(directories.sql('{table}."id" = %s'), [directories.param("id", directory.id)])
    assert got.scim_secret == Directory.objects.get(pk=directory.pk).scim_secret
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT scim_secret FROM directories_directory WHERE id = %s", [directories.param("id", directory.id)]
        )
        assert cursor.fetchone()[0].startswith("enc:v1:")


def test_writer_update_writes_only_the_named_fields_and_updated_at() -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "type": "okta-scim-v2"})
    user = _user(directory, "bob@example.com")
    writer.insert(user)
    before = DirectoryUser.objects.get(pk=user.pk)
    time.sleep(0.01)

    stale = DirectoryUser.objects.get(pk=user.pk)
    stale.first_name = "not written"
    stale.active = False
    writer.update(stale, ["active"])
    after = DirectoryUser.objects.get(pk=user.pk)
    assert after.active is False
    assert after.first_name == "Ä"  # not named, not written
    assert after.updated_at > before.updated_at

    writer.update(after, [])  # only the timestamp
    assert DirectoryUser.objects.get(pk=user.pk).updated_at >= after.updated_at


def test_reader_lock_clause_only_where_the_database_has_row_locks() -> None:
    from django.db import connection

    sql = users.sql('{table}."id" = %s', lock="no_key_update")
    assert sql.endswith(" FOR NO KEY UPDATE") == connection.features.has_select_for_update


def test_rows_cursor_reads_the_same_instants_as_the_orm_and_leaves_the_connection_alone() -> None:
    """On PostgreSQL, rows_cursor parses timestamptz with psycopg's compiled loader: the values must be
    the ORM's, in UTC, and a cursor Django opens afterwards must still carry Django's own loader."""
    from django.db import connection

    from core import rows
    from core.timefmt import iso_utc

    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "type": "okta-scim-v2"})
    user = _user(directory, "times@example.com")
    writer.insert(user)
    sql = users.sql('{table}."directory_id" = %s AND {table}."id" = %s')
    fast = users.first(sql, [users.param("id", directory.id), users.param("id", user.id)])
    slow = DirectoryUser.objects.get(pk=user.pk)
    for name in ("created_at", "updated_at"):
        assert getattr(fast, name) == getattr(slow, name)
        assert getattr(fast, name).utcoffset().total_seconds() == 0
        assert iso_utc(getattr(fast, name)) == iso_utc(getattr(slow, name))
    if connection.vendor != "postgresql":
        return
    import psycopg

    with rows.rows_cursor() as cursor:
        loader = cursor.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, psycopg.pq.Format.TEXT)
        if psycopg.pq.__impl__ != "python":  # compiled psycopg (psycopg[binary] in requirements.txt)
            assert loader is rows._TIMESTAMPTZ_LOADER
            assert loader.__module__ != "django.db.backends.postgresql.psycopg_any"
    with connection.cursor() as cursor:  # Django's own cursor: its check of the connection's loader holds
        cursor.execute("SELECT now()")
        assert cursor.fetchone()[0].utcoffset().total_seconds() == 0
