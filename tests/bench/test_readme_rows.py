"""Code kept for speed names its row of bench/README.md's "Code kept for speed" table (the one home of the
figures): every such pointer in the code must name a row that exists, so a renamed or deleted row cannot
leave a comment pointing nowhere."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POINTER = re.compile(r"""Code kept for speed['"],\s*(?:"([^"]+)"|'([^']+)')""")


def _rows() -> set[str]:
    section = (ROOT / "bench" / "README.md").read_text().split("## Code kept for speed", 1)[1].split("\n## ", 1)[0]
    return {name.strip() for name in re.findall(r"^\| ([^|]+?) \|", section, re.M)} - {"row", "---"}


def _pointers() -> list[tuple[str, str]]:
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = []
    for name in files.stdout.split():
        text = (ROOT / name).read_text()
        flat = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)  # a pointer may wrap across comment or docstring lines
        found += [(name, m.group(1) or m.group(2)) for m in POINTER.finditer(flat)]
    return found


def test_every_pointer_in_the_code_names_a_row_of_the_table() -> None:
    rows, pointers = _rows(), _pointers()
    assert len(pointers) >= 10, pointers  # the scan finds the pointers the code has
    assert [(file, row) for file, row in pointers if row not in rows] == []
