#!/usr/bin/env bash
# Roster's documented web server (python -m server.web: granian, preloaded) against the plain granian
# line and gunicorn's gthread worker, same workload, same run: see bench/README.md, "The switch to granian". Arguments
# go to bench.servers (e.g. bash bench/servers.sh --users 300 --rounds 1 for a quick check).
#
# The servers run from their own virtualenv, bench/.servers-venv (git-ignored), made here on first use
# and again when requirements.txt changes: the project's requirements plus gunicorn, which the project
# itself no longer depends on.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=bench/.servers-venv
GUNICORN=gunicorn==27.0.1
if [ ! -x "$VENV/bin/gunicorn" ] || [ ! -f "$VENV/.installed" ] || [ requirements.txt -nt "$VENV/.installed" ]; then
    python3.11 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet -r requirements.txt "$GUNICORN"
    touch "$VENV/.installed"
fi
exec .venv/bin/python -m bench.servers --servers-venv "$VENV" "$@"
