#!/usr/bin/env bash
# Create .venv with Python 3.11 and install the pinned requirements (only when they changed).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
  echo "$want" > "$stamp"
fi
# Roster's own packages compiled to bytecode here: where PYTHONDONTWRITEBYTECODE is set Python never writes
# it, and every process would compile them again at start (slower, and with a larger heap).
.venv/bin/python -m compileall -q -j 0 $(for d in */__init__.py; do dirname "$d"; done) >/dev/null
