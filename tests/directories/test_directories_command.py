"""`manage.py directories list|show|export` (contract §7.1): for operators, never a secret."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from directories.models import Directory
from tests.scim.conftest import Scim, group_body, user_body

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("directories", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def populated(directory_a: Directory) -> Directory:
    scim = Scim(directory_a)
    ids = [scim.post("/Users", user_body(f"u{i}@acme.example"))[1]["id"] for i in range(3)]
    assert scim.post("/Groups", group_body("Ops", members=ids[:2]))[0] == 201
    assert scim.post("/Groups", group_body("Empty"))[0] == 201
    return directory_a


def test_list_is_an_aligned_table_filtered_by_tenant_and_product(populated: Directory, directory_b: Directory) -> None:
    lines = run("list").splitlines()
    assert lines[0].split() == ["ID", "NAME", "TENANT", "PRODUCT", "TYPE", "USERS", "GROUPS", "STATE"]
    assert {line.index("TENANT") if i == 0 else None for i, line in enumerate(lines)} - {None}
    row = next(line for line in lines if str(populated.id) in line)
    assert row.split()[-3:] == ["3", "2", "active"]
    only_globex = run("list", "--tenant", "globex")
    assert str(directory_b.id) in only_globex and str(populated.id) not in only_globex
    assert run("list", "--tenant", "nobody") == "No directories.\n"


@pytest.mark.parametrize("option", ["--tenant", "--product"])
def test_list_refuses_a_filter_the_database_cannot_compare(db: Any, option: str) -> None:
    with pytest.raises(CommandError, match=f"{option} must not contain unpaired surrogate"):
        run("list", option, "acme\udcff")  # what Python makes of a non-UTF-8 byte in an argument


def test_show_gives_settings_and_counts_and_no_secret(populated: Directory) -> None:
    populated.webhook_url = "https://hooks.example.com/roster"
    populated.webhook_secret = "whsec-canary-0123456789"
    populated.save()
    out = run("show", str(populated.id))
    assert "users          3" in out and "groups         2" in out and "https://hooks.example.com/roster" in out
    assert populated.scim_secret not in out and "whsec-canary" not in out


@pytest.mark.parametrize("ref", ["7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f", "not-a-uuid", "' OR 1=1 --", "\x00"])
def test_an_unknown_directory_is_a_clear_error(db: Any, ref: str) -> None:
    for action in ("show", "export"):
        with pytest.raises(CommandError, match="No directory has the id"):
            run(action, ref)


def test_export_writes_json_lines_in_the_rest_shapes(populated: Directory, api_client: Client, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    err = io.StringIO()
    call_command("directories", "export", str(populated.id), "--output", str(target), stderr=err)
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [row["type"] for row in rows] == ["user"] * 3 + ["group"] * 2
    query = "?tenant=acme&product=crm"
    for row in rows:
        kind = "users" if row["type"] == "user" else "groups"
        rest = api_client.get(f"/api/v1/directory-sync/{kind}/{row['data']['id']}{query}").json()["data"]
        assert row["data"] == rest
    ops = next(row["data"] for row in rows if row["type"] == "group" and row["data"]["name"] == "Ops")
    assert len(ops["members"]) == 2
    assert "Exported 3 users and 2 groups" in err.getvalue() and "\r" not in err.getvalue()  # no bar when piped


def test_export_of_another_tenant_does_not_mix_directories(populated: Directory, directory_b: Directory) -> None:
    Scim(directory_b).post("/Users", user_body("other@globex.example"))
    out = io.StringIO()
    call_command("directories", "export", str(directory_b.id), stdout=out, stderr=io.StringIO())
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [row["data"]["email"] for row in rows] == ["other@globex.example"]


def test_export_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    """A real process whose stderr is a terminal (a pseudo-terminal) and whose lines go to a file."""
    database = tmp_path / "roster.sqlite3"
    env = {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    code = (
        "import django; django.setup(); from directories.services import directory_create; "
        "from audit.actors import command_actor; from directories.models import DirectoryUser; "
        "d = directory_create(actor=command_actor(), data={'tenant': 't', 'product': 'p'}); "
        "[DirectoryUser.objects.create(directory=d, user_name=f'u{i}', user_name_key=f'u{i}') for i in range(3)]; "
        "print(d.id)"
    )
    directory_id = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=60
    ).stdout.split()[-1]
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal has a size
    target = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "manage.py", "directories", "export", directory_id, "--output", str(target)],
        cwd=ROOT,
        env=env,
        stderr=terminal,
        stdout=subprocess.DEVNULL,
        timeout=120,
    )
    os.close(terminal)
    shown = os.read(controller, 65536).decode(errors="replace")
    os.close(controller)
    assert done.returncode == 0 and "3/3" in shown and "row" in shown, shown
    assert len(target.read_text().splitlines()) == 3
