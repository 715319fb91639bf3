"""The documents and docstrings stay true to the tree: every repository path a document names exists, and
every dotted Roster name a docstring gives (a module, or a module's class or function) resolves.

A file that moves must move its pointers in the same commit; these tests are what makes that so.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A backticked token that reads like a path inside the repository: letters, digits and `_ . / -`, with at
# least one slash (a bare `apis.py` in a table row is relative to the row's folder, not checkable alone).
BACKTICKED = re.compile(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*/[A-Za-z0-9_./-]*)`")
# A dotted name that starts with one of Roster's packages: `scim.processor`, `webhooks.tasks.drain_publish`
# (not the tail of a longer one, such as the JSON path `data.scim.oauth.client_secret`).
DOTTED = r"(?<![\w.])({roots})((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b"


@cache
def _tracked() -> tuple[str, ...]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return tuple(out.split())


@cache
def _top_level() -> frozenset[str]:
    return frozenset(name.split("/", 1)[0] for name in _tracked())


def _documents() -> list[Path]:
    docs = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [doc for doc in docs if doc.exists()]


def _ignored(ref: str) -> bool:
    """A place the tools make and git ignores (`bench/results/`, a benchmark's virtualenv): named on purpose."""
    return subprocess.run(["git", "check-ignore", "-q", ref], cwd=ROOT).returncode == 0


def _exists(doc: Path, ref: str) -> bool:
    if _ignored(ref):
        return True
    ref = ref.rstrip("/").split(":", 1)[0]
    if (ROOT / ref).exists() or (doc.parent / ref).exists():
        return True
    return any(name == ref or name.startswith(ref + "/") for name in _tracked())


def _repository_paths(doc: Path) -> list[str]:
    """The backticked tokens of `doc` that name something in the repository: their first segment is a
    top-level entry of the tree (so `application/json` or `/api/v1/...` are not taken for paths)."""
    found = []
    for ref in BACKTICKED.findall(doc.read_text()):
        first = ref.split("/", 1)[0]
        if first in _top_level() or (doc.parent != ROOT and (doc.parent / first).exists()):
            found.append(ref)
    return found


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_a_document_names_exists(doc: Path) -> None:
    refs = _repository_paths(doc)
    assert [ref for ref in refs if not _exists(doc, ref)] == []


def test_the_path_scan_finds_the_paths_the_documents_name() -> None:
    # The architecture page names dozens of files; a scan that found none would pass every document.
    assert len(_repository_paths(ROOT / "docs" / "architecture.md")) >= 40


def _roster_packages() -> list[str]:
    return sorted(
        name
        for name in _top_level()
        if (ROOT / name / "__init__.py").exists() and name not in {"tests", "bench", "clients"}
    )


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]
    return [doc for node in nodes if (doc := ast.get_docstring(node))]


@cache
def _task_names() -> frozenset[str]:
    from config.celery import app

    app.loader.import_default_modules()
    return frozenset(app.tasks)


def _resolves(dotted: str) -> bool:
    """True when `dotted` names a Celery task (`webhooks.drain`), or when its longest importable prefix is a
    module and the rest are that module's attributes."""
    if dotted in _task_names():
        return True
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def _docstring_names() -> list[tuple[str, str]]:
    pattern = re.compile(DOTTED.format(roots="|".join(_roster_packages())))
    names = []
    for name in _tracked():
        if not name.endswith(".py") or name.split("/", 1)[0] not in _roster_packages() or "/migrations/" in name:
            continue
        for doc in _docstrings(ROOT / name):
            # A name followed by "/" or a file extension is a path (`scim/routes.py`), not a module.
            for match in pattern.finditer(doc):
                tail = doc[match.end() : match.end() + 1]
                dotted = match.group(1) + match.group(2)
                if tail == "/" or re.search(r"\.(py|md|html|sh|json|toml|ya?ml|js|ts|css)$", dotted):
                    continue
                names.append((name, dotted))
    return names


def test_every_dotted_roster_name_in_a_docstring_resolves() -> None:
    names = _docstring_names()
    assert len(names) >= 20, names  # the scan finds the names the docstrings give
    assert [(file, dotted) for file, dotted in names if not _resolves(dotted)] == []


# A pointer into the benchmark reference: `bench/README.md, "Other measured costs"` or `bench/README.md`
# ("Code kept for speed"), possibly wrapped across lines of a comment or a document.
SECTION_POINTER = re.compile(r"""bench/README\.md`?,?\s*\(?\s*["“]([^"”]+)["”]""")


def _bench_names() -> set[str]:
    """The headings of bench/README.md and the first cells of its tables' rows."""
    text = (ROOT / "bench" / "README.md").read_text()
    headings = {m.strip() for m in re.findall(r"^#+ (.+)$", text, re.M)}
    rows = {m.strip() for m in re.findall(r"^\| ([^|]+?) \|", text, re.M)}
    return headings | rows


def _section_pointers() -> list[tuple[str, str]]:
    found = []
    for name in _tracked():
        if not name.endswith((".py", ".md")) or name.startswith("clients/"):
            continue
        flat = re.sub(r"\s*\n\s*(?:#\s*)?", " ", (ROOT / name).read_text())
        found += [(name, m.group(1).strip()) for m in SECTION_POINTER.finditer(flat)]
    return found


def test_every_pointer_into_the_benchmark_reference_names_a_heading_or_a_row() -> None:
    names, pointers = _bench_names(), _section_pointers()
    assert len(pointers) >= 10, pointers
    assert [(file, section) for file, section in pointers if section not in names] == []
