"""The single-statement SCIM writes of PostgreSQL (scim/storage/statements.py, their SQL in
scim/storage/postgres.py), as HTTP requests run them: outside any transaction. Each write is checked for
its statement count, its stored rows, its outbox event and its fallback to the locked path when the row
changed between the read and the write.

On SQLite these skip (the locked path is the only one there); under CI=true the suite runs on
PostgreSQL, where they must run.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta
from typing import Any

import orjson
import pytest
from django.db import connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from directories.models import Deprovision, Directory, DirectoryGroup, DirectoryUser, GroupMembership, HeldChange
from scim import storage
from scim.api import scim_request
from scim.storage import guard, postgres
from scim.storage.statements import StatementStore
from tests.scim.conftest import Scim, group_body, user_body
from tests.scim.guardkit import DEACTIVATE_OKTA, guard_set
from webhooks.models import EventSequence, WebhookEvent
from webhooks.services import draining

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the single-statement writes are PostgreSQL's (CI runs them)")


@pytest.fixture
def kicks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[uuid.UUID, str]]:
    """Record the after-commit delivery kicks instead of delivering, so the outbox rows stay to be read."""
    calls: list[tuple[uuid.UUID, str]] = []
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: calls.append((directory_id, target)))
    return calls


def _events(directory: Directory) -> list[tuple[str, dict[str, Any]]]:
    rows = WebhookEvent.objects.filter(directory_id=directory.id).order_by("sequence")
    return [(row.event_type, orjson.loads(row.body)["data"]) for row in rows]


def _meanwhile(monkeypatch: pytest.MonkeyPatch, name: str, change: Any) -> list[Any]:
    """Make `postgres.<name>` run `change(**kwargs)` first (another request's write landing between this
    request's read and its statement); returns the list the real statement's results are appended to."""
    real = getattr(postgres, name)
    outcomes: list[Any] = []

    def wrapped(**kwargs: Any) -> Any:
        change(**kwargs)
        outcomes.append(real(**kwargs))
        return outcomes[-1]

    monkeypatch.setattr(postgres, name, wrapped)
    return outcomes


def _count(operation: Any) -> tuple[Any, int]:
    with CaptureQueriesContext(connection) as ctx:
        result = operation()
    return result, len(ctx.captured_queries)


def test_user_create_is_authentication_plus_one_statement(scim_hooked: Scim, kicks: list) -> None:
    (status, body), queries = _count(lambda: scim_hooked.post("/Users", user_body("ann@x.io", externalId="e1")))
    assert status == 201
    assert queries == 2  # the directory lookup, then the user and its event in one statement
    user = DirectoryUser.objects.get(pk=body["id"])
    assert (user.user_name, user.user_name_key, user.external_id, user.active) == ("ann@x.io", "ann@x.io", "e1", True)
    assert user.created_at is not None and user.updated_at >= user.created_at
    assert body["meta"]["created"].startswith(user.created_at.isoformat()[:19])
    [(event_type, data)] = _events(scim_hooked.directory)
    assert event_type == "user.created"
    assert data["id"] == body["id"] and data["email"] == "ann@x.io"
    assert kicks == [(scim_hooked.directory.id, "directory")]


def test_duplicate_user_name_is_409_and_leaves_no_row_or_event(scim_hooked: Scim, kicks: list) -> None:
    scim_hooked.post("/Users", user_body("bob@x.io"))
    status, body = scim_hooked.post("/Users", user_body("BOB@x.io"))
    assert status == 409 and body["scimType"] == "uniqueness"
    assert DirectoryUser.objects.filter(directory=scim_hooked.directory).count() == 1
    assert [t for t, _ in _events(scim_hooked.directory)] == ["user.created"]
    assert len(kicks) == 1


def test_user_create_without_webhook_records_a_numbered_feed_event_and_sends_nothing(scim_a: Scim, kicks: list) -> None:
    """Without a webhook of its own the event is `dropped` for the directory at once; its drain is still
    kicked once, after the commit, because only the worker matches events against the webhook endpoints."""
    status, _ = scim_a.post("/Users", user_body("cy@x.io"))
    assert status == 201
    assert DirectoryUser.objects.filter(directory=scim_a.directory).count() == 1
    assert [t for t, _ in _events(scim_a.directory)] == ["user.created"]
    assert kicks == [(scim_a.directory.id, "directory")]
    event = WebhookEvent.objects.get(directory_id=scim_a.directory.id)
    assert (event.state, event.sequence, orjson.loads(event.body)["sequence"]) == ("dropped", 1, 1)


def test_group_create_without_members_is_authentication_plus_one_statement(scim_hooked: Scim, kicks: list) -> None:
    scim_hooked.post("/Users", user_body("first@x.io"))  # the directory's event number 1
    (status, body), queries = _count(lambda: scim_hooked.post("/Groups", group_body("Admins", members=[])))
    assert status == 201
    assert queries == 2  # the directory lookup, then the group and its event in one statement
    group = DirectoryGroup.objects.get(pk=body["id"])
    assert (group.display_name, group.display_name_key) == ("Admins", "admins")
    assert body["meta"]["created"].startswith(group.created_at.isoformat()[:19])
    events = WebhookEvent.objects.filter(directory_id=scim_hooked.directory.id).order_by("sequence")
    assert [(e.event_type, e.sequence) for e in events] == [("user.created", 1), ("group.created", 2)]
    assert orjson.loads(events[1].body)["data"]["id"] == body["id"]
    status, body = scim_hooked.post("/Groups", group_body("ADMINS"))
    assert status == 409 and body["scimType"] == "uniqueness"
    assert DirectoryGroup.objects.filter(directory=scim_hooked.directory).count() == 1
    assert EventSequence.objects.get(directory_id=scim_hooked.directory.id).last == 2  # the failed one took no number


def test_group_create_with_members_takes_the_locked_path(scim_hooked: Scim, kicks: list) -> None:
    _, user = scim_hooked.post("/Users", user_body("member@x.io"))
    status, body = scim_hooked.post("/Groups", group_body("Staff", members=[user["id"]]))
    assert status == 201 and [m["value"] for m in body["members"]] == [user["id"]]
    assert [t for t, _ in _events(scim_hooked.directory)] == ["user.created", "group.created", "group.user_added"]


def test_user_patch_is_read_plus_one_conditional_statement(scim_hooked: Scim, kicks: list) -> None:
    # With the deprovision guard on, a deactivation is a deprovision, counted on the locked path (below); with
    # it off, a PATCH like any other.
    guard_set(scim_hooked.directory, enabled=False)
    _, created = scim_hooked.post("/Users", user_body("dee@x.io"))
    before = DirectoryUser.objects.get(pk=created["id"]).updated_at
    (status, body), queries = _count(
        lambda: scim_hooked.ops(f"/Users/{created['id']}", {"op": "replace", "path": "active", "value": False})
    )
    assert status == 200 and body["active"] is False
    assert queries == 2  # authenticate with the user's row (one query), update + event
    user = DirectoryUser.objects.get(pk=created["id"])
    assert user.active is False and user.raw["active"] is False and user.updated_at > before
    assert [(t, d["active"]) for t, d in _events(scim_hooked.directory)] == [
        ("user.created", True),
        ("user.updated", False),
    ]
    # The same PATCH again changes nothing: no write, no event.
    (status, _), queries = _count(
        lambda: scim_hooked.ops(f"/Users/{created['id']}", {"op": "replace", "path": "active", "value": False})
    )
    assert status == 200 and queries == 1
    assert len(_events(scim_hooked.directory)) == 2


def test_a_user_write_reads_the_user_only_for_an_authenticated_request(
    scim_hooked: Scim, scim_b: Scim, kicks: list
) -> None:
    # The user's row comes in the authentication's query, before the secret is checked: a wrong
    # secret, another directory's user or an unknown id must still get exactly what they got before.
    _, mine = scim_hooked.post("/Users", user_body("ida@x.io"))
    _, theirs = scim_b.post("/Users", user_body("jon@x.io"))
    deactivate = {"op": "replace", "path": "active", "value": False}
    intruder = Scim(scim_hooked.directory, secret="wrong-secret")
    assert intruder.ops(f"/Users/{mine['id']}", deactivate)[0] == 401
    assert intruder.delete(f"/Users/{mine['id']}")[0] == 401
    (status, _), queries = _count(lambda: scim_hooked.ops(f"/Users/{theirs['id']}", deactivate))
    assert status == 404 and queries == 1
    assert scim_hooked.delete(f"/Users/{theirs['id']}")[0] == 404
    assert scim_hooked.put(f"/Users/{uuid.uuid4()}", user_body("ida@x.io"))[0] == 404
    assert DirectoryUser.objects.get(pk=mine["id"]).active is True
    assert DirectoryUser.objects.get(pk=theirs["id"]).active is True
    assert [t for t, _ in _events(scim_hooked.directory)] == ["user.created"]


def test_user_update_with_a_stale_read_writes_nothing(scim_hooked: Scim, kicks: list) -> None:
    _, created = scim_hooked.post("/Users", user_body("eve@x.io"))
    user = DirectoryUser.objects.get(pk=created["id"])
    before = DirectoryUser.objects.get(pk=created["id"])
    stale = user.updated_at.replace(year=2000)
    user.first_name = "Changed"
    assert (
        postgres.user_update_statement(
            directory=scim_hooked.directory, user=user, names=["first_name"], read_at=stale, before=before
        )
        is None
    )
    assert DirectoryUser.objects.get(pk=created["id"]).first_name == "Jane"
    assert len(_events(scim_hooked.directory)) == 1


def test_user_changed_between_read_and_write_is_redone_under_the_lock(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, created = scim_hooked.post("/Users", user_body("fay@x.io"))
    outcomes = _meanwhile(
        monkeypatch,
        "user_update_statement",
        lambda **kw: DirectoryUser.objects.filter(pk=created["id"]).update(
            first_name="Other", updated_at=kw["read_at"].replace(year=2030)
        ),
    )
    status, body = scim_hooked.ops(f"/Users/{created['id']}", {"op": "replace", "path": "title", "value": "Boss"})
    assert status == 200 and body["title"] == "Boss"
    assert outcomes == [None]
    user = DirectoryUser.objects.get(pk=created["id"])
    assert user.raw["title"] == "Boss"
    assert [t for t, _ in _events(scim_hooked.directory)] == ["user.created", "user.updated"]  # one event, not two


def test_user_delete_removes_memberships_and_records_the_event(scim_hooked: Scim, kicks: list) -> None:
    guard_set(scim_hooked.directory, enabled=False)  # deleting an active user is a deprovision (below)
    _, user = scim_hooked.post("/Users", user_body("gus@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("G", members=[user["id"]]))
    (status, _), queries = _count(lambda: scim_hooked.delete(f"/Users/{user['id']}"))
    assert status == 204 and queries == 2  # authenticate with the user's row, delete user + memberships + event
    assert not DirectoryUser.objects.filter(pk=user["id"]).exists()
    assert not GroupMembership.objects.filter(group_id=group["id"]).exists()
    event_type, data = _events(scim_hooked.directory)[-1]
    assert event_type == "user.deleted" and data["id"] == user["id"]
    assert scim_hooked.delete(f"/Users/{user['id']}")[0] == 404


def test_user_delete_falls_back_when_the_user_changed(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    guard_set(scim_hooked.directory, enabled=False)  # deleting an active user is a deprovision (below)
    _, user = scim_hooked.post("/Users", user_body("hal@x.io"))
    outcomes = _meanwhile(
        monkeypatch,
        "user_delete_statement",
        lambda **kw: DirectoryUser.objects.filter(pk=user["id"]).update(
            first_name="Renamed", updated_at=kw["user"].updated_at.replace(year=2030)
        ),
    )
    assert scim_hooked.delete(f"/Users/{user['id']}")[0] == 204
    assert outcomes == [None]  # the statement deleted nothing; the locked path did
    assert not DirectoryUser.objects.filter(pk=user["id"]).exists()
    event_type, data = _events(scim_hooked.directory)[-1]
    assert event_type == "user.deleted" and data["first_name"] == "Renamed"
    assert [t for t, _ in _events(scim_hooked.directory)].count("user.deleted") == 1


def test_deleting_a_deactivated_user_stays_one_statement_with_the_guard_on(scim_hooked: Scim, kicks: list) -> None:
    _, user = scim_hooked.post("/Users", user_body("ivy@x.io"))
    assert scim_hooked.patch(f"/Users/{user['id']}", DEACTIVATE_OKTA)[0] == 200
    (status, _), queries = _count(lambda: scim_hooked.delete(f"/Users/{user['id']}"))
    assert status == 204 and queries == 2  # the usual clean-up after a deactivation: not a deprovision
    assert not DirectoryUser.objects.filter(pk=user["id"]).exists()


def test_a_deprovision_the_guard_counts_is_two_statements_in_one_transaction(scim_hooked: Scim, kicks: list) -> None:
    """Authentication with the user's row, then the user's and the directory's locks in one statement, the
    window's record with the write and its event in another, sent together as one implicit transaction (no
    BEGIN, no COMMIT): whatever the directory's size."""
    ids = [scim_hooked.post("/Users", user_body(f"d{i}@x.io"))[1]["id"] for i in range(4)]
    counts = []
    for user_id in ids[:2]:
        (status, _), queries = _count(lambda user_id=user_id: scim_hooked.patch(f"/Users/{user_id}", DEACTIVATE_OKTA))
        assert status == 200
        counts.append(queries)
    for user_id in ids[2:]:
        (status, _), queries = _count(lambda user_id=user_id: scim_hooked.delete(f"/Users/{user_id}"))
        assert status == 204
        counts.append(queries)
    assert counts == [3, 3, 3, 3], counts
    assert [t for t, _ in _events(scim_hooked.directory)][-4:] == [
        "user.updated",
        "user.updated",
        "user.deleted",
        "user.deleted",
    ]
    assert Deprovision.objects.filter(directory=scim_hooked.directory).count() == 4
    assert not DirectoryUser.objects.filter(pk__in=ids[2:]).exists()
    assert list(DirectoryUser.objects.filter(pk__in=ids[:2]).values_list("active", flat=True)) == [False, False]


def test_past_max_users_the_guard_still_counts_in_two_statements_within_max_percent(
    scim_hooked: Scim, kicks: list
) -> None:
    """Once the window holds `max_users`, the record asks the active users in the same statement: within
    `max_percent` the deprovision is still recorded and written by the two statements; past it the record
    inserts nothing, so neither does the write, and the locked path holds it (its one BEGIN)."""
    guard_set(scim_hooked.directory, max_users=1, max_percent=40)
    ids = [scim_hooked.post("/Users", user_body(f"m{i}@x.io"))[1]["id"] for i in range(5)]
    (status, _), first = _count(lambda: scim_hooked.patch(f"/Users/{ids[0]}", DEACTIVATE_OKTA))
    assert status == 200 and first == 3
    (status, _), second = _count(lambda: scim_hooked.delete(f"/Users/{ids[1]}"))  # 2 of 5: 40 %, within
    assert status == 204 and second == 3
    assert not DirectoryUser.objects.filter(pk=ids[1]).exists()
    with CaptureQueriesContext(connection) as ctx:  # 3 of 5: held
        assert scim_hooked.patch(f"/Users/{ids[2]}", DEACTIVATE_OKTA)[0] == 200
    sql = [q["sql"] for q in ctx.captured_queries]
    assert sum(q.startswith("BEGIN") for q in sql) == 1 and len(sql) > 3, sql
    assert DirectoryUser.objects.get(pk=ids[2]).active is True
    assert HeldChange.objects.filter(directory=scim_hooked.directory).count() == 1
    assert Deprovision.objects.filter(directory=scim_hooked.directory).count() == 2
    assert [t for t, _ in _events(scim_hooked.directory)][-2:] == ["user.updated", "user.deleted"]


@pytest.mark.parametrize(
    ("max_users", "max_percent", "active", "counted"),
    [(1, 20, 10, 1), (1, 20, 10, 2), (2, 25, 6, 2), (3, 50, 3, 3), (5, 10, 60, 5), (5, 10, 60, 6), (1, 99, 1, 1)],
)
def test_the_window_sql_decides_as_the_rules_do(
    hooked_directory: Directory, max_users: int, max_percent: int, active: int, counted: int
) -> None:
    """The record's condition in SQL against `rules.trips`, with `counted` deprovisions in the window and
    `active` active users (those the window counts are inactive): it inserts exactly when the rules let one
    more through."""
    from directories.guard import rules

    now = rules.now()
    for i in range(active + counted):
        DirectoryUser.objects.create(
            directory=hooked_directory, user_name=f"w{i}@x.io", user_name_key=f"w{i}@x.io", active=i < active
        )
    Deprovision.objects.bulk_create([Deprovision(directory=hooked_directory, at=now) for _ in range(counted)])
    setting = {"enabled": True, "max_users": max_users, "max_percent": max_percent, "window_minutes": 60}
    sql, params = guard._within_limits_sql(setting, hooked_directory.id, now - timedelta(minutes=60), now, ("TRUE", []))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        inserted = cursor.rowcount
        transaction.set_rollback(True)
    assert inserted == (0 if rules.trips(counted, active, setting) else 1)


def test_a_counted_deprovision_sends_its_two_statements_in_one_pipeline(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory's lock is held for no round trip to this process: the window's record, the write and
    its event go with the locks, built from the guard as authentication read it."""
    ids = [scim_hooked.post("/Users", user_body(f"p{i}@x.io"))[1]["id"] for i in range(3)]
    sent: list[list[str]] = []
    inside: list[bool] = []
    psycopg_connection = type(connection.connection)
    real_pipeline = psycopg_connection.pipeline

    @contextlib.contextmanager
    def pipeline(self: Any) -> Any:
        sent.append([])
        inside.append(True)
        try:
            with real_pipeline(self) as opened:
                yield opened
        finally:
            inside.pop()

    def executed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if inside:
            sent[-1].append(sql)
        return execute(sql, params, many, context)

    monkeypatch.setattr(psycopg_connection, "pipeline", pipeline)
    with connection.execute_wrapper(executed):
        assert scim_hooked.patch(f"/Users/{ids[0]}", DEACTIVATE_OKTA)[0] == 200
        assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204
    assert [len(statements) for statements in sent] == [2, 2], sent
    for locks, write in sent:
        assert "FOR NO KEY UPDATE" in locks and "INSERT INTO" in write and "webhooks_webhookevent" in write
    assert DirectoryUser.objects.get(pk=ids[0]).active is False
    assert not DirectoryUser.objects.filter(pk=ids[1]).exists()
    assert Deprovision.objects.filter(directory=scim_hooked.directory).count() == 2
    assert [t for t, _ in _events(scim_hooked.directory)][-2:] == ["user.updated", "user.deleted"]


def test_a_deprovision_cancelled_to_break_a_deadlock_is_redone_on_the_locked_path(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one lock the two statements take after the events' counter is the users' tally row of their
    session (its trigger runs at the statement's end). A transaction holding that row and then asking for
    the counter closes a cycle; PostgreSQL cancels the deprovision's transaction (here its deadlock_timeout
    is the shorter), which wrote nothing, and the store redoes it on the locked path: one change, one event."""
    import threading

    import psycopg

    from directories.models import UserTally

    ids = [scim_hooked.post("/Users", user_body(f"d{i}@x.io"))[1]["id"] for i in range(3)]
    directory = scim_hooked.directory
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
        cursor.execute("SET deadlock_timeout = '500ms'")
    db = connection.settings_dict
    other = psycopg.connect(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"]
    )
    tally, counter = UserTally._meta.db_table, EventSequence._meta.db_table
    other.execute("SET deadlock_timeout = '20s'")
    # The tally row the deprovision's session adds to, held by a transaction of its own.
    other.execute(
        f'INSERT INTO {tally} AS t ("directory_id", "shard", "created", "deleted", "active") '  # noqa: S608
        "VALUES (%s, %s, 0, 0, 0) ON CONFLICT (directory_id, shard) DO UPDATE SET active = t.active",
        [directory.id, pid % UserTally.SHARDS],
    )
    errors: list[BaseException] = []

    def then_the_counter() -> None:
        try:
            with psycopg.connect(
                dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"]
            ) as watch:
                for _ in range(500):  # until the deprovision waits for the tally row
                    row = watch.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
                    if row and row[0] == "Lock":
                        break
                    watch.execute("SELECT pg_sleep(0.01)")
            other.execute(f'SELECT 1 FROM {counter} WHERE "directory_id" = %s FOR UPDATE', [directory.id])  # noqa: S608
            other.commit()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
            other.rollback()

    pipelines: list[list[Any]] = []
    real_locks = guard._locks

    def locks(**kwargs: Any) -> list[Any]:
        pipelines.append(real_locks(**kwargs))
        return pipelines[-1]

    monkeypatch.setattr(guard, "_locks", locks)
    thread = threading.Thread(target=then_the_counter)
    thread.start()
    try:
        status, body = scim_hooked.patch(f"/Users/{ids[0]}", DEACTIVATE_OKTA)
    finally:
        thread.join(30)
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET deadlock_timeout")
    assert not errors, errors
    assert pipelines == [[]]  # the two statements were cancelled, not merely delayed
    assert status == 200 and body["active"] is False
    assert DirectoryUser.objects.get(pk=ids[0]).active is False
    assert Deprovision.objects.filter(directory=directory).count() == 1
    assert [t for t, _ in _events(directory)].count("user.updated") == 1
    assert UserTally.objects.filter(directory=directory).aggregate(a=Sum("active"))["a"] == 2


def test_an_error_in_the_two_statements_leaves_the_connection_idle(scim_hooked: Scim, kicks: list) -> None:
    """An error in the second statement ends the implicit transaction with the locks the first took, raises
    as Django's error, and leaves no transaction open on the connection for the next request."""
    import psycopg
    from django.db import DataError

    _, created = scim_hooked.post("/Users", user_body("fail@x.io"))
    user = DirectoryUser.objects.get(pk=created["id"])
    with pytest.raises(DataError):
        guard._locks(directory=scim_hooked.directory, user=user, delete=False, then=("SELECT CAST(%s AS int)", ["x"]))
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert scim_hooked.patch(f"/Users/{user.id}", DEACTIVATE_OKTA)[0] == 200  # nothing left locked
    assert Deprovision.objects.filter(directory=scim_hooked.directory).count() == 1


def _after_the_guess(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    """Run `change()` once, committed, between authentication's read of the directory and the locks."""
    real = guard._guessed_counting
    done: list[bool] = []

    def guessed(*args: Any) -> Any:
        counting = real(*args)
        if not done:
            done.append(True)
            change()
        return counting

    monkeypatch.setattr(guard, "_guessed_counting", guessed)


def test_a_guard_made_stricter_after_authentication_read_it_is_decided_by_the_locked_rows(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guess records nothing when the locked directory says otherwise; the setting read under the lock
    decides: here the window is full for it and 2 of 5 is past its 20 %, so the change is held."""
    ids = [scim_hooked.post("/Users", user_body(f"s{i}@x.io"))[1]["id"] for i in range(5)]
    assert scim_hooked.patch(f"/Users/{ids[0]}", DEACTIVATE_OKTA)[0] == 200
    _after_the_guess(
        monkeypatch, lambda: guard_set(Directory.objects.get(pk=scim_hooked.directory.id), max_users=1, max_percent=20)
    )
    assert scim_hooked.patch(f"/Users/{ids[1]}", DEACTIVATE_OKTA)[0] == 200
    assert DirectoryUser.objects.get(pk=ids[1]).active is True
    assert HeldChange.objects.filter(directory=scim_hooked.directory).count() == 1
    assert Deprovision.objects.filter(directory=scim_hooked.directory).count() == 1
    assert [t for t, _ in _events(scim_hooked.directory)].count("user.updated") == 1


def test_a_guard_turned_off_after_authentication_read_it_counts_nothing(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [scim_hooked.post("/Users", user_body(f"o{i}@x.io"))[1]["id"] for i in range(2)]
    _after_the_guess(monkeypatch, lambda: guard_set(Directory.objects.get(pk=scim_hooked.directory.id), enabled=False))
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert not DirectoryUser.objects.filter(pk=ids[0]).exists()
    assert not Deprovision.objects.filter(directory=scim_hooked.directory).exists()
    assert not HeldChange.objects.filter(directory=scim_hooked.directory).exists()
    assert [t for t, _ in _events(scim_hooked.directory)][-1] == "user.deleted"


def _add(scim: Scim, group_id: str, *user_ids: str) -> Any:
    return scim.ops(f"/Groups/{group_id}", {"op": "add", "path": "members", "value": [{"value": u} for u in user_ids]})


def test_member_add_is_authentication_one_read_and_one_statement(scim_hooked: Scim, kicks: list) -> None:
    _, u1 = scim_hooked.post("/Users", user_body("ida@x.io"))
    _, u2 = scim_hooked.post("/Users", user_body("jon@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Sales"))
    before = DirectoryGroup.objects.get(pk=group["id"]).updated_at
    kicks.clear()
    (status, _), queries = _count(lambda: _add(scim_hooked, group["id"], u2["id"], u1["id"]))
    # The directory lookup; once authenticated, the group and the users in one query; memberships + events.
    assert status == 204 and queries == 3
    assert set(GroupMembership.objects.filter(group_id=group["id"]).values_list("user_id", flat=True)) == {
        uuid.UUID(u1["id"]),
        uuid.UUID(u2["id"]),
    }
    assert DirectoryGroup.objects.get(pk=group["id"]).updated_at > before
    added = [(t, d["id"], d["group"]["name"]) for t, d in _events(scim_hooked.directory) if t == "group.user_added"]
    assert added == [("group.user_added", u2["id"], "Sales"), ("group.user_added", u1["id"], "Sales")]  # request order
    assert kicks == [(scim_hooked.directory.id, "directory")]
    # Adding present members again (and one new) records only the new one.
    _, u3 = scim_hooked.post("/Users", user_body("kim@x.io"))
    assert _add(scim_hooked, group["id"], u1["id"], u3["id"], u3["id"])[0] == 204
    added = [d["id"] for t, d in _events(scim_hooked.directory) if t == "group.user_added"]
    assert added == [u2["id"], u1["id"], u3["id"]]
    # Nothing new at all: no event, updated_at kept.
    stamp = DirectoryGroup.objects.get(pk=group["id"]).updated_at
    assert _add(scim_hooked, group["id"], u1["id"])[0] == 204
    assert DirectoryGroup.objects.get(pk=group["id"]).updated_at == stamp
    assert len([t for t, _ in _events(scim_hooked.directory) if t == "group.user_added"]) == 3
    # Numbered 1..n without a hole: the statement numbers only the memberships it really added, and a
    # no-op add takes no number.
    rows = WebhookEvent.objects.filter(directory_id=scim_hooked.directory.id).order_by("sequence")
    assert [row.sequence for row in rows] == list(range(1, rows.count() + 1))
    assert all(orjson.loads(row.body)["sequence"] == row.sequence for row in rows)
    counter = EventSequence.objects.get(directory_id=scim_hooked.directory.id)
    assert counter.last == rows.count()


def test_member_add_of_an_unknown_user_is_400_and_adds_nothing(scim_hooked: Scim, scim_b: Scim, kicks: list) -> None:
    _, mine = scim_hooked.post("/Users", user_body("lu@x.io"))
    _, other = scim_b.post("/Users", user_body("lu@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Ops"))
    status, body = _add(scim_hooked, group["id"], mine["id"], other["id"])
    assert status == 400 and body["scimType"] == "invalidValue"
    assert not GroupMembership.objects.filter(group_id=group["id"]).exists()
    assert _add(scim_hooked, str(uuid.uuid4()), mine["id"])[0] == 404


def test_a_member_add_reads_the_group_only_for_an_authenticated_request(
    scim_hooked: Scim, scim_b: Scim, kicks: list
) -> None:
    # The body is parsed, and the group and the users are read, only once the secret is checked: a
    # wrong secret answers 401 whatever the body, another directory's group 404, a bad body 400.
    _, mine = scim_hooked.post("/Users", user_body("nia@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Mine"))
    _, their_group = scim_b.post("/Groups", group_body("Theirs"))
    intruder = Scim(scim_hooked.directory, secret="wrong-secret")
    assert _add(intruder, group["id"], mine["id"])[0] == 401
    assert intruder.call("PATCH", f"/Groups/{group['id']}", b"{not json")[0] == 401
    (status, _), queries = _count(lambda: _add(scim_hooked, their_group["id"], mine["id"]))
    assert status == 404 and queries == 2  # the directory lookup, then the group and the users
    status, body = scim_hooked.call("PATCH", f"/Groups/{group['id']}", b"{not json")
    assert status == 400 and body["scimType"] == "invalidSyntax"
    assert not GroupMembership.objects.exists()
    assert [t for t, _ in _events(scim_hooked.directory)] == ["user.created", "group.created"]
    assert _add(scim_hooked, group["id"], mine["id"])[0] == 204
    assert list(GroupMembership.objects.values_list("user_id", flat=True)) == [uuid.UUID(mine["id"])]


def test_a_member_add_body_is_worked_out_once(scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch) -> None:
    import scim.services.groups
    from scim.protocol.documents import patch_operations

    calls: list[Any] = []

    def counted(body: Any) -> Any:
        calls.append(body)
        return patch_operations(body)

    monkeypatch.setattr(scim.services.groups, "patch_operations", counted)
    _, user = scim_hooked.post("/Users", user_body("ola@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Once"))
    assert _add(scim_hooked, group["id"], user["id"])[0] == 204
    assert len(calls) == 1  # after authentication, once: the store gets the ids it adds, not the body
    assert GroupMembership.objects.filter(group_id=group["id"]).count() == 1


@pytest.mark.parametrize(
    "body",
    [
        b"null",
        b"[]",
        b"5",
        b'{"Operations": "add"}',
        b'{"Operations": [{"op": "add", "path": "members", "value": "not a list"}]}',
        b'{"Operations": [{"op": "add", "path": "members", "value": [{"value": 5}]}]}',
        b'{"Operations": [{"op": "add", "path": "members", "value": [{"value": "not-a-uuid"}]}]}',
        b'{"Operations": [{"op": "add", "path": "members", "value": [{"value": "\\u0000"}]}]}',
        b'{"Operations": [{"op": "add", "path": "members", "value": []}]}',
    ],
)
def test_a_malformed_member_add_is_a_scim_error_not_a_500(scim_hooked: Scim, kicks: list, body: bytes) -> None:
    # Bodies that a member add's read (scim.services.groups.members_added) must turn away cleanly.
    _, group = scim_hooked.post("/Groups", group_body("Odd"))
    status, answer = scim_hooked.call("PATCH", f"/Groups/{group['id']}", body)
    assert 400 <= status < 500 or status in (200, 204), (status, answer)
    if status >= 400:
        assert answer["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert not GroupMembership.objects.exists()


def test_member_add_after_a_rename_is_redone_with_the_new_name(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, user = scim_hooked.post("/Users", user_body("max@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Old"))
    rename = {
        "method": "PATCH",
        "directoryId": str(scim_hooked.directory.id),
        "apiSecret": scim_hooked.directory.scim_secret,
        "resourceType": "groups",
        "resourceId": group["id"],
        "body": {"Operations": [{"op": "replace", "path": "displayName", "value": "New"}]},
    }
    outcomes = _meanwhile(monkeypatch, "members_add_statement", lambda **kw: scim_request(rename))
    assert _add(scim_hooked, group["id"], user["id"])[0] == 204
    assert outcomes == [None]
    [(_, data)] = [(t, d) for t, d in _events(scim_hooked.directory) if t == "group.user_added"]
    assert data["group"]["name"] == "New"
    assert GroupMembership.objects.filter(group_id=group["id"], user_id=user["id"]).count() == 1


def test_member_add_of_a_user_deleted_meanwhile_is_400(
    scim_hooked: Scim, kicks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, user = scim_hooked.post("/Users", user_body("ned@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Eng"))
    # The user is deleted after this request read it: the statement's foreign key fails, nothing is written.
    outcomes = _meanwhile(
        monkeypatch, "members_add_statement", lambda **kw: DirectoryUser.objects.filter(pk=user["id"]).delete()
    )
    status, body = _add(scim_hooked, group["id"], user["id"])
    assert outcomes == [None]
    assert status == 400 and "Not a user" in body["detail"]
    assert not GroupMembership.objects.filter(group_id=group["id"]).exists()
    assert [t for t, _ in _events(scim_hooked.directory) if t == "group.user_added"] == []


def test_inside_a_callers_transaction_the_locked_path_is_used(hooked_directory: Directory, kicks: list) -> None:
    request = {
        "method": "POST",
        "directoryId": str(hooked_directory.id),
        "apiSecret": hooked_directory.scim_secret,
        "resourceType": "users",
        "body": user_body("oz@x.io"),
    }
    with transaction.atomic():
        assert not isinstance(storage.current(), StatementStore)
        with CaptureQueriesContext(connection) as ctx:
            assert scim_request(request)["status"] == 201
        assert any(q["sql"].startswith("SAVEPOINT") for q in ctx.captured_queries)
    assert isinstance(storage.current(), StatementStore)
    assert [t for t, _ in _events(hooked_directory)] == ["user.created"]
