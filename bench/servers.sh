#!/usr/bin/env bash
# Roster's documented web server (gunicorn + server/keepalive_worker.py) against gunicorn's gthread
# worker and granian (WSGI), same workload, same run: see bench/README.md, "Servers". Arguments go to
# bench.servers (e.g. bash bench/servers.sh --users 300 --rounds 1 for a quick check).
#
# The servers run from their own virtualenv, bench/.servers-venv (git-ignored), made here on first use
# and again when requirements.txt changes: the project's requirements plus granian, which the
# project itself does not depend on.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=bench/.servers-venv
GRANIAN=granian==2.8.7
if [ ! -x "$VENV/bin/granian" ] || [ ! -f "$VENV/.installed" ] || [ requirements.txt -nt "$VENV/.installed" ]; then
    python3.11 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet -r requirements.txt "$GRANIAN"
    touch "$VENV/.installed"
fi
exec .venv/bin/python -m bench.servers --servers-venv "$VENV" "$@"
