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
