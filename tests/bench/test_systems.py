"""bench.systems: how a run's web server options reach Roster, and the commands it starts."""

from __future__ import annotations

import argparse

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
