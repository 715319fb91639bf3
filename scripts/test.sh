#!/usr/bin/env bash
# Set up, check the import contracts (lint-imports) and run the whole test suite. Locally it uses SQLite
# unless TEST_DATABASE_URL is set; with CI=true it runs on the local PostgreSQL and Redis and fails if
# either is missing.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/scim -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

# Browser tests drive Debian's Chromium (Playwright's own browser download cannot work offline).
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium" >&2
fi

if [ "${CI:-}" = "true" ]; then
  export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/roster_ci}
  export TEST_BROKER_URL=${TEST_BROKER_URL:-redis://127.0.0.1:6379/15}
fi
# The import contracts of pyproject.toml ([tool.importlinter]): a broken one fails the run before any test.
.venv/bin/lint-imports --no-logo --no-cache
exec .venv/bin/python -m pytest "$@"
