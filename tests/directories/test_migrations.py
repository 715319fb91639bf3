"""The migrations of issue 21 fill the new derived columns of rows stored before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("directories", "0003_user_tally"), ("scim", None)]
AFTER = [("directories", "0004_filter_documents_and_maps"), ("scim", "0001_filter_documents_backfill")]
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"


@pytest.mark.django_db(transaction=True)
def test_email_keys_and_comparison_documents_are_filled_for_existing_rows() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE[:1]).apps
    directory = old.get_model("directories", "Directory").objects.create(
        name="Old", tenant="acme", product="crm", scim_secret="s"
    )
    raw = {"userName": "Ann@X.io", "title": "Chief", ENTERPRISE: {"department": "R&D"}}
    old.get_model("directories", "DirectoryUser").objects.create(
        directory=directory, user_name="Ann@X.io", user_name_key="ann@x.io", email="Ann@X.io", raw=raw
    )
    old.get_model("directories", "DirectoryGroup").objects.create(
        directory=directory, display_name="Eng", display_name_key="eng", raw={"displayName": "Eng"}
    )
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    user = new.get_model("directories", "DirectoryUser").objects.get()
    assert user.email_key == "ann@x.io"
    assert user.filter_doc == {
        "username": ["ann@x.io"],
        "title": ["chief"],
        ENTERPRISE.lower(): [{"department": ["r&d"]}],
    }
    assert new.get_model("directories", "DirectoryGroup").objects.get().filter_doc == {"displayname": ["eng"]}
    assert new.get_model("directories", "Directory").objects.get().attribute_map == {}
    executor.loader.build_graph()  # leave the database at the latest state for the next tests
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_existing_directories_get_the_deprovision_guards_defaults() -> None:
    """Migration 0008: every directory stored before it has the guard on with the defaults, nothing held."""
    before = [("directories", "0006_drop_redundant_fk_indexes")]
    after = [("directories", "0008_deprovision_guard")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    directory = old.get_model("directories", "Directory").objects.create(
        name="Old", tenant="acme", product="crm", scim_secret="s"
    )
    old.get_model("directories", "DirectoryUser").objects.create(
        directory=directory, user_name="ann@x.io", user_name_key="ann@x.io", raw={"userName": "ann@x.io"}
    )
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    migrated = new.get_model("directories", "Directory").objects.get()
    assert migrated.deprovision_guard == {"enabled": True, "max_users": 10, "max_percent": 20, "window_minutes": 60}
    assert migrated.guard_tripped_at is None and migrated.guard_armed_at is None
    assert new.get_model("directories", "DirectoryUser").objects.get().held is False
    # The view of the identity provider's users shows the user as its row.
    assert new.get_model("directories", "ScimUser").objects.get().user_name == "ann@x.io"
    executor.loader.build_graph()
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_single_oauth_secret_becomes_the_legacy_entry_of_the_list() -> None:
    """0010_oauth_secrets: a directory's client secret digest moves into `scim_oauth_secrets`, as the entry
    version 1 tokens are checked against, expiring a year later; a directory without one gets an empty list."""
    from datetime import UTC, datetime, timedelta

    before, after = [("directories", "0009_rate_limits")], [("directories", "0010_oauth_secrets")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("directories", "Directory")
    made = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    old.objects.create(
        name="On",
        tenant="acme",
        product="crm",
        scim_secret="s",
        scim_oauth_secret_hash="ab" * 32,
        scim_oauth_secret_created_at=made,
    )
    old.objects.create(name="Off", tenant="acme", product="crm", scim_secret="s")
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps.get_model("directories", "Directory")
    [entry] = new.objects.get(name="On").scim_oauth_secrets
    assert entry["hash"] == "ab" * 32 and entry["legacy"] is True and entry["last_used_at"] is None
    assert datetime.fromisoformat(entry["created_at"]) == made
    expires = datetime.fromisoformat(entry["expires_at"])
    assert timedelta(days=364) < expires - datetime.now(UTC) <= timedelta(days=365)
    assert new.objects.get(name="Off").scim_oauth_secrets == []
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
