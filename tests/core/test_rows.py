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


def test_request_log_entries_read_back_exactly_as_written(django_assert_num_queries) -> None:  # noqa: ANN001
    """scim_log_write_many sends a batch by COPY on PostgreSQL (RowWriter.copy_rows) and by INSERT elsewhere:
    text that COPY's format must escape (tabs, line breaks, backslashes, its NULL marker), an IPv6 address,
    no address, and a field left out (its default) all read back as given, in one statement per batch."""
    from datetime import UTC, datetime

    from directories.activity.services import scim_log_write_many
    from directories.models import ScimLogEntry

    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "type": "okta-scim-v2"})
    at = datetime(2026, 11, 28, 12, 0, 0, 123456, tzinfo=UTC)
    awkward = 'a\tb\nc\r\\N \\ "é" 😀 ,;|'
    full = {
        "at": at,
        "method": "PATCH",
        "path": "/Users/" + awkward,
        "query": 'filter=userName eq "x\\y"',
        "status": 429,
        "scim_type": "tooMany",
        "detail": awkward,
        "latency_ms": 3,
        "request_id": "rid-1",
        "client_ip": "2001:db8::1",
        "user_agent": "Okta\tSCIM",
        "request_body": '{"password": "***", "x": "\\\\N"}',
        "request_truncated": True,
        "response_body": "",
        "response_truncated": False,
    }
    partial = {k: v for k, v in full.items() if k not in ("user_agent", "response_truncated")}
    partial.update(client_ip=None, request_id="rid-2")
    from django.db import connection

    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 3):  # INSERT: BEGIN, batch, COMMIT
        assert scim_log_write_many(entries=[(directory.id, full), (directory.id, partial)]) == 2
    got = {e.request_id: e for e in ScimLogEntry.objects.filter(directory=directory)}
    assert set(got) == {"rid-1", "rid-2"}
    for name, value in full.items():
        assert getattr(got["rid-1"], name) == value, name
    assert got["rid-2"].client_ip is None
    assert (got["rid-2"].user_agent, got["rid-2"].response_truncated) == ("", False)
    assert got["rid-1"].id != got["rid-2"].id


def test_instances_made_without_init_are_those_from_db_makes() -> None:
    """Rows become instances without Model.__init__ (core.rows): the same attributes, deferred fields
    deferred (read on access, as with .only()), the same state, saved again as an update."""
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "type": "okta-scim-v2"})
    user = _user(directory, "bare@example.com")
    writer.insert(user)
    some = RowReader(DirectoryUser, fields=("id", "directory", "user_name", "raw", "updated_at"))
    sql = some.sql('{table}."id" = %s')
    params = [some.param("id", user.id)]
    assert some._prepare("default").attnames is not None  # this model takes the bare path
    bare = some.first(sql, params)
    made = DirectoryUser.objects.only("id", "directory", "user_name", "raw", "updated_at").get(pk=user.pk)
    assert type(bare) is DirectoryUser
    assert {k: v for k, v in vars(bare).items() if k != "_state"} == {
        k: v for k, v in vars(made).items() if k != "_state"
    }
    assert bare.get_deferred_fields() == made.get_deferred_fields() and "first_name" in bare.get_deferred_fields()
    assert (bare._state.adding, bare._state.db) == (False, "default")
    assert bare.first_name == "Ä"  # a deferred field is read when asked for
    assert bare.directory == directory  # the foreign key resolves
    bare.user_name = "renamed@example.com"
    bare.save(update_fields=["user_name"])  # an update, not an insert
    assert DirectoryUser.objects.get(pk=user.pk).user_name == "renamed@example.com"


def test_a_model_with_init_listeners_is_built_through_init() -> None:
    from django.db.models.signals import post_init

    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "type": "okta-scim-v2"})
    user = _user(directory, "heard@example.com")
    writer.insert(user)
    seen: list[object] = []

    def heard(sender, instance, **kwargs) -> None:  # noqa: ANN001, ANN003
        seen.append(instance)

    post_init.connect(heard, sender=DirectoryUser)
    try:
        got = users.first(users.sql('{table}."id" = %s'), [users.param("id", user.id)])
    finally:
        post_init.disconnect(heard, sender=DirectoryUser)
    assert seen == [got]
