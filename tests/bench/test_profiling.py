"""Summaries of py-spy's collapsed stacks: self time, project functions, buckets."""

from __future__ import annotations

from pathlib import Path

from bench.profiling import summarize
from bench.systems import ROOT as _ROOT

# Paths as py-spy writes them for this checkout (wherever it was cloned).
ROOT = str(_ROOT)
SITE = f"{ROOT}/.venv/lib/python3.11/site-packages"


def test_summarize_counts_self_inclusive_and_buckets(tmp_path: Path) -> None:
    raw = tmp_path / "phase.txt"
    raw.write_text(
        f'process 12:"python -m server.web";_runner ({SITE}/granian/wsgi.py:55);'
        f"scim_view ({ROOT}/scim/http/views.py:20);execute ({SITE}/psycopg/cursor.py:90) 30\n"
        f'process 12:"python -m server.web";_runner ({SITE}/granian/wsgi.py:55);'
        f"scim_view ({ROOT}/scim/http/views.py:20);dumps ({SITE}/orjson/__init__.py:1) 10\n"
        f'process 13:"python -m server.web";_runner ({SITE}/granian/wsgi.py:55);'
        f"response_bytes ({SITE}/granian/wsgi.py:60) 60\n"
        "not a stack line\n"
    )
    summary = summarize(raw)
    assert summary["samples"] == 100
    assert summary["self"][0] == ("granian/wsgi.py:response_bytes", 60.0)
    assert ("psycopg/cursor.py:execute", 30.0) in summary["self"]
    assert summary["project_inclusive"] == [("scim/http/views.py:scim_view", 40.0)]
    buckets = dict(summary["buckets"])
    assert buckets["granian (WSGI glue)"] == 100.0
    assert buckets["SQL driver (psycopg + django/db/backends)"] == 30.0
    assert buckets["JSON (json / orjson)"] == 10.0


def test_summarize_of_a_missing_recording_is_empty(tmp_path: Path) -> None:
    assert summarize(tmp_path / "none.txt") == {"samples": 0}
