#!/usr/bin/env bash
# Set up, check the import contracts (lint-imports) and the SCIM store's types (mypy), and run the whole test
# suite. Locally it uses SQLite unless TEST_DATABASE_URL is set; with CI=true it runs on the local PostgreSQL
# and Redis and fails if either is missing, and tests/image/test_container.py builds and runs the container
# image (scripts/container-test.sh, which installs podman, runc and mmdebstrap when missing; locally it runs
# with ROSTER_CONTAINER_TEST=1).
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

# The client libraries (clients/): the TypeScript client's tests need Node.js (Debian's nodejs and npm when it is
# missing) and its devDependencies (npm ci, from its lock file, again only when the lock file changed); then the
# generated code of both libraries must be what the current OpenAPI document gives.
if ! command -v node >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's nodejs and npm for the TypeScript client..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
    || echo "warning: could not install nodejs and npm" >&2
fi
ts=clients/typescript
ts_stamp=$ts/node_modules/.package-lock.sha256
ts_want=$(sha256sum "$ts/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$ts_stamp" 2>/dev/null)" != "$ts_want" ]; then
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$ts_want" > "$ts_stamp"
fi
bash scripts/clients-generate.sh --check

if [ "${CI:-}" = "true" ]; then
  export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/roster_ci}
  export TEST_BROKER_URL=${TEST_BROKER_URL:-redis://127.0.0.1:6379/15}
fi
# The import contracts of pyproject.toml ([tool.importlinter]): a broken one fails the run before any test.
.venv/bin/lint-imports --no-logo --no-cache
# The SCIM store's protocols, type-checked against the stores that claim them ([tool.mypy] in pyproject.toml).
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
