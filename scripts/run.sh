#!/usr/bin/env bash
# Set up and start Roster on its embedded defaults: SQLite under var/, webhooks delivered
# in-process, DEBUG on, at http://127.0.0.1:8000. Any variable of contract §2 set in the
# environment overrides these defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export DEBUG=${DEBUG:-true}
export API_KEYS=${API_KEYS:-dev-api-key}
export ADMIN_ROOT_TOKEN=${ADMIN_ROOT_TOKEN:-dev-admin-root-token}
export WEBHOOK_ALLOW_PRIVATE_NETWORKS=${WEBHOOK_ALLOW_PRIVATE_NETWORKS:-true}
.venv/bin/python manage.py migrate --noinput >/dev/null
cat <<MSG
Roster (development defaults) on http://127.0.0.1:8000
  REST API key:      $API_KEYS        (Authorization: Bearer <key>)
  Admin root token:  $ADMIN_ROOT_TOKEN  (POST /auditlog/admin/v1/user/_login)
  Portal:            http://127.0.0.1:8000/portal/  (make a sign-in with: .venv/bin/python manage.py createadmin --email you@example.com)
MSG
exec .venv/bin/python manage.py runserver 127.0.0.1:8000
