#!/usr/bin/env bash
# Roster vs Jackson, same workload, same run: see bench/README.md. Arguments go to bench.compare
# (e.g. bash bench/compare.sh --rounds 3, or --systems jackson --users 200 for a quick look).
#
# Roster runs from bench/.roster-venv (git-ignored): requirements.txt only, as a production install has
# it. The development tools of .venv (test libraries, pygments, ...) are not there, so nothing that
# production would not load is loaded (DRF, for one, imports some optional packages when installed).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=bench/.roster-venv
if [ ! -x "$VENV/bin/granian" ] || [ ! -f "$VENV/.installed" ] || [ requirements.txt -nt "$VENV/.installed" ]; then
    python3.11 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt
    touch "$VENV/.installed"
fi
exec .venv/bin/python -m bench.compare --roster-venv "$VENV" "$@"
