"""bench.systems: how a run's web server options reach Roster, and the commands it starts."""

from __future__ import annotations

import argparse

import pytest

from bench import systems


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    systems.web_arguments_add(parser)
    return parser.parse_args(list(argv))


def test_only_the_web_options_given_become_environment_variables() -> None:
    assert systems.web_env(_args()) == {}
    args = _args("--web-threads", "2", "--web-workers", "4")
    assert systems.web_env(args) == {"GRANIAN_BLOCKING_THREADS": "2"}
    assert args.web_workers == 4  # passed as RosterOptions.web_workers (a command-line flag), not env


def test_the_calling_shells_granian_variables_do_not_reach_roster(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("GRANIAN_WORKERS", "7")
    env = systems.roster_env(systems.RosterOptions(extra_env={"GRANIAN_BLOCKING_THREADS": "2"}))
    assert "GRANIAN_WORKERS" not in env and env["GRANIAN_BLOCKING_THREADS"] == "2"


def test_roster_starts_with_the_readme_s_production_commands() -> None:
    opts = systems.RosterOptions(port=9000)
    python = str(systems.VENV_BIN / "python")
    assert systems.web_command(opts) == [python, "-m", "server.web", "--bind", "127.0.0.1:9000"]
    assert systems.worker_command(opts) == [
        python,
        "-m",
        "server.worker",
        "--pool",
        "threads",
        "--concurrency",
        "4",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    assert systems.web_command(systems.RosterOptions(port=9000, web_workers=3))[-2:] == ["--workers", "3"]


@pytest.mark.django_db(transaction=True)
def test_the_compare_s_roster_directory_has_the_guard_s_defaults(live_server, settings) -> None:  # noqa: ANN001
    """The benchmark deprovisions a tenth of its directory: its guard stays on, with the defaults, which count
    those deprovisions (past 10 users, within 20 %) without holding one."""
    from urllib.parse import urlsplit

    from bench.systems import System, roster_directory_create
    from directories.models import Directory
    from tests.conftest import API_KEY

    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    port = urlsplit(live_server.url).port
    system = System("roster", port, API_KEY, page_size=100, totals_capped=False, webhook_scheme="roster")
    scim_path, secret = roster_directory_create(
        system, tag="guard", webhook_url="http://127.0.0.1:9/hook", webhook_secret="whsec-bench-0123456789abcdef"
    )
    directory = Directory.objects.get(pk=scim_path.rpartition("/")[2])
    assert directory.scim_secret == secret
    assert directory.deprovision_guard == {"enabled": True, "max_users": 10, "max_percent": 20, "window_minutes": 60}
