"""`manage.py webhooks_resend` (contract §5.1): what it prints, what it queues, and a one-line message with
exit code 1 (no traceback) for each refusal."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import load_command_class

from audit.models import AuditEntry
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.webhooks.feedrows import feed_events
from webhooks.models import EventState, WebhookEvent

pytestmark = pytest.mark.django_db

F = EventState.FAILED


@pytest.fixture
def hooked(settings) -> Directory:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    return directory_create(
        actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "webhook_url": "http://127.0.0.1:9/hook"}
    )


@pytest.fixture(autouse=True)
def os_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "deploy")


@pytest.fixture(autouse=True)
def no_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the command queues is checked here, not its delivery: on PostgreSQL the tests commit for real
    (tests/conftest.py), and the after-commit kick would have the in-process drain attempt the events at
    once (the kick and the drain are tested in test_draining.py)."""
    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)


@pytest.fixture(autouse=True)
def connections_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_from_argv closes every database connection as it ends, which would close the test's."""
    from django.db import connections

    monkeypatch.setattr(connections, "close_all", lambda: None)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the command as manage.py does (run_from_argv: a CommandError becomes a line on stderr and
    the exit status); returns (exit code, stdout, stderr)."""
    command = load_command_class("webhooks", "webhooks_resend")
    code = 0
    try:
        command.run_from_argv(["manage.py", "webhooks_resend", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _queued(directory: Directory) -> list[int]:
    return sorted(
        WebhookEvent.objects.filter(directory_id=directory.id, state=EventState.PENDING, resend=True).values_list(
            "sequence", flat=True
        )
    )


def test_from_alone_runs_to_the_newest_event_and_prints_the_count(
    hooked: Directory, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_events(hooked, [EventState.DELIVERED, F, F, F])
    code, out, err = _run(capsys, "--directory", str(hooked.id), "--from", "2")
    assert (code, err) == (0, "")
    assert out == f"queued 3 event(s) of directory {hooked.id} for one more attempt\n"
    assert _queued(hooked) == [2, 3, 4]
    entry = AuditEntry.objects.get(action="directory.events_resent")
    assert entry.actor is None
    assert (entry.details["via"], entry.details["actor"]) == ("manage.py", "manage.py (deploy)")
    assert (entry.details["from"], entry.details["to"], entry.details["queued"]) == (2, 4, 3)


def test_a_range_and_event_ids(hooked: Directory, capsys: pytest.CaptureFixture[str]) -> None:
    rows = feed_events(hooked, [F, F, F, F])
    assert _run(capsys, "--directory", str(hooked.id), "--from", "1", "--to", "2")[1].startswith("queued 2 event(s)")
    code, out, _err = _run(
        capsys, "--directory", str(hooked.id), "--event-id", str(rows[3].id), "--event-id", str(rows[0].id)
    )
    assert code == 0 and out.startswith("queued 1 event(s)")  # the first one is already waiting
    assert _queued(hooked) == [1, 2, 4]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--from", "0"], "from must be an integer"),
        (["--from", "x"], "from must be an integer"),
        (["--from", "3", "--to", "1"], "from must not be greater than to"),
        (["--from", "1", "--to", "1001"], "at most 1000 events"),
        (["--event-id", "nope"], "event_ids must hold event ids"),
        (["--event-id", "00000000-0000-0000-0000-000000000000"], "Not events of this directory"),
        (["--from", "1", "--event-id", "00000000-0000-0000-0000-000000000000"], "not both"),
        ([], "Give --from"),
        (["--to", "3"], "Give --from"),
    ],
)
def test_refusals_are_one_line_with_exit_code_1(
    hooked: Directory, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    feed_events(hooked, [F, F])
    code, out, err = _run(capsys, "--directory", str(hooked.id), *args)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and said in err and "Traceback" not in err
    assert _queued(hooked) == []
    assert not AuditEntry.objects.filter(action="directory.events_resent").exists()


def test_unknown_directory_and_409s(hooked: Directory, capsys: pytest.CaptureFixture[str]) -> None:
    feed_events(hooked, [F])
    for missing in (str(uuid.uuid4()), "not-an-id"):
        code, _out, err = _run(capsys, "--directory", missing, "--from", "1")
        assert code == 1 and err == f"CommandError: No directory with id '{missing}'.\n"
    Directory.objects.filter(pk=hooked.pk).update(webhook_url="")
    code, _out, err = _run(capsys, "--directory", str(hooked.id), "--from", "1")
    assert code == 1 and "no webhook endpoint" in err and err.count("\n") == 1
    Directory.objects.filter(pk=hooked.pk).update(webhook_url="http://127.0.0.1:9/hook", deactivated=True)
    code, _out, err = _run(capsys, "--directory", str(hooked.id), "--from", "1")
    assert code == 1 and "deactivated" in err
    assert _queued(hooked) == []
