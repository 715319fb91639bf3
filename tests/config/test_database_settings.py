"""config.settings: how Roster talks to PostgreSQL (server-side binding and prepared statements)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

from directories.models import Directory
from tests.scim.conftest import Scim

ROOT = Path(__file__).resolve().parents[2]


def production_options(**env: str) -> dict:
    """DATABASES["default"]["OPTIONS"] as config.settings builds them, in a fresh interpreter."""
    code = "import json, config.settings as s; print(json.dumps(s.DATABASES['default']['OPTIONS']))"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DB_")}
    environ.update(
        {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/roster", "SECRET_KEY": "x" * 50, "DEBUG": "false"}, **env
    )
    command = [sys.executable, "-c", code]
    out = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_prepared_statements_are_on_by_default() -> None:
    # Django turns them off unless prepare_threshold is given; the hot SCIM statements need them.
    assert production_options() == {"server_side_binding": True, "prepare_threshold": 5}


def test_prepared_statements_can_be_turned_off_for_a_pooler() -> None:
    assert production_options(DB_PREPARE_THRESHOLD="0")["prepare_threshold"] is None
    no_binding = production_options(DB_SERVER_SIDE_BINDING="false")
    assert no_binding == {"server_side_binding": False, "prepare_threshold": None}


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_scim_lookup_run_often_is_prepared_on_postgresql(directory_a: Directory) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's (CI runs this)")
    scim_a = Scim(directory_a)
    for _ in range(6):  # psycopg prepares a statement on its fifth run on a connection
        assert scim_a.get(f"/Users/{uuid.uuid4()}")[0] == 404
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("directories_directory" in text and "directories_directoryuser" in text for text in prepared), prepared
