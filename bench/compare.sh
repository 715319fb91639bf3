#!/usr/bin/env bash
# Roster vs Jackson, same workload, same run: see bench/README.md. Arguments go to bench.compare
# (e.g. bash bench/compare.sh --rounds 3, or --systems jackson --users 200 for a quick look).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m bench.compare "$@"
