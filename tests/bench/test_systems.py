"""bench.systems: how a run's gunicorn options reach Roster."""

from __future__ import annotations

import argparse

from bench import systems


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    systems.gunicorn_arguments_add(parser)
    return parser.parse_args(list(argv))


def test_only_the_gunicorn_options_given_become_environment_variables() -> None:
    assert systems.gunicorn_env(_args()) == {}
    args = _args("--gunicorn-worker-class", "sync", "--gunicorn-worker-connections", "3", "--gunicorn-workers", "4")
    assert systems.gunicorn_env(args) == {"GUNICORN_WORKER_CLASS": "sync", "GUNICORN_WORKER_CONNECTIONS": "3"}
    assert args.gunicorn_workers == 4  # passed as RosterOptions.gunicorn_workers (a command-line flag), not env


def test_the_calling_shells_gunicorn_variables_do_not_reach_roster(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("GUNICORN_WORKER_CLASS", "gthread")
    env = systems.roster_env(systems.RosterOptions(extra_env={"GUNICORN_THREADS": "2"}))
    assert "GUNICORN_WORKER_CLASS" not in env and env["GUNICORN_THREADS"] == "2"
