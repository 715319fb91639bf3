"""The activity recorder writes what is left when a web worker exits: granian's workers are multiprocessing
children, which leave through os._exit and so never run atexit."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from directories.activity import recorder


def _child(marker: str) -> None:
    def flush() -> None:
        Path(marker).write_text("flushed")

    # Stand-ins for the database work: the child must not close the connection it shares with the parent.
    recorder._recorder.flush = flush  # type: ignore[method-assign]
    recorder.close_old_connections = lambda: None
    recorder._recorder._start()  # what the first recorded request does


def test_a_multiprocessing_child_flushes_when_it_exits(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    child = multiprocessing.get_context("fork").Process(target=_child, args=(str(marker),))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert marker.read_text() == "flushed"


def test_the_exit_flush_runs_once_when_both_exit_paths_run(monkeypatch) -> None:  # noqa: ANN001
    state = recorder.Recorder()
    calls: list[str] = []
    monkeypatch.setattr(state, "flush", lambda: calls.append("flush"))
    monkeypatch.setattr(recorder, "close_old_connections", lambda: None)
    state._exit()
    state._exit()
    assert calls == ["flush"]
