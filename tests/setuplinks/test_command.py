"""`manage.py directories setup-link | setup-links | setup-link-revoke` (contract §3.1)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from setuplinks.models import SetupLink
from tests.setuplinks.conftest import make_link

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("directories", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_setup_link_prints_the_url_once_and_is_audited_with_the_os_user(directory_a: Directory) -> None:
    out, err = run("setup-link", str(directory_a.id), "--expires-in", "600")
    url = out.strip()
    assert url.startswith("http://testserver/setup/") and "\n" not in url
    assert "shown only now" in err
    link = SetupLink.objects.get()
    assert (link.expires_at - link.created_at).total_seconds() == 600
    assert link.created_by.startswith("manage.py (")
    assert Client().get(url.removeprefix("http://testserver")).status_code == 200
    entry = AuditEntry.objects.get(action="setup_link.created")
    assert entry.details["via"] == "manage.py" and entry.details["actor"] == link.created_by


def test_setup_link_takes_the_return_url_and_mapping_options(directory_a: Directory) -> None:
    run("setup-link", str(directory_a.id), "--return-url", "https://app.example.com/x", "--allow-mapping")
    link = SetupLink.objects.get()
    assert (link.return_url, link.allow_mapping) == ("https://app.example.com/x", True)
    assert (link.expires_at - link.created_at).total_seconds() == 259200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expires-in", "299"], "expires_in must be an integer from 300 to 2592000"),
        (["--expires-in", "2592001"], "expires_in must be an integer from 300 to 2592000"),
        (["--expires-in", "1h"], "expires_in must be an integer"),
        (["--return-url", "http://app.example.com"], "return_url must be an https URL"),
    ],
)
def test_setup_link_refuses_bad_options_with_the_services_message(
    directory_a: Directory, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        run("setup-link", str(directory_a.id), *args)
    assert not SetupLink.objects.exists()


def test_setup_link_refuses_an_unknown_or_deactivated_directory(directory_a: Directory) -> None:
    with pytest.raises(CommandError, match="No directory has the id"):
        run("setup-link", "6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11")
    directory_a.deactivated = True
    directory_a.save()
    with pytest.raises(CommandError, match="deactivated"):
        run("setup-link", str(directory_a.id))
    assert not SetupLink.objects.exists()


def test_setup_links_lists_without_tokens_and_revoke_ends_one(directory_a: Directory, directory_b: Directory) -> None:
    link, token = make_link(directory_a)
    make_link(directory_b)
    out, _ = run("setup-links", str(directory_a.id))
    lines = out.strip().splitlines()
    assert lines[0].split()[:2] == ["ID", "STATUS"] and len(lines) == 2
    assert str(link.id) in lines[1] and " active " in lines[1] and token not in out
    out, _ = run("setup-link-revoke", str(directory_a.id), str(link.id))
    assert f"Setup link {link.id} revoked" in out
    assert Client().get(f"/setup/{token}").status_code == 404
    assert " revoked " in run("setup-links", str(directory_a.id))[0]
    theirs = SetupLink.objects.get(directory=directory_b)
    with pytest.raises(CommandError, match="No setup link of this directory"):
        run("setup-link-revoke", str(directory_a.id), str(theirs.id))
    assert (
        "No setup links."
        in run("setup-links", str(Directory.objects.create(name="empty", tenant="t", product="p", scim_secret="s").id))[
            0
        ]
    )


def test_the_subcommands_are_listed_in_the_commands_help() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "directories", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"DJANGO_SETTINGS_MODULE": "config.settings_test", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    # `held` is the deprovision guard's (adminauth), handed down before setup links' (INSTALLED_APPS order).
    assert "{list,show,export,held,setup-link,setup-links,setup-link-revoke}" in done.stdout
