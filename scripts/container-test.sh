#!/usr/bin/env bash
# The container image, built and run for real: a Debian 12 base made from Debian's packages (no image
# registry needed), the image built from the repository's Dockerfile on it and inspected, then `migrate`,
# `web`, `worker` and `beat` containers on a read-only root filesystem against a fresh PostgreSQL database
# and a Redis of their own, driven from outside (tests/image/drive.py: a directory, a SCIM push, the signed
# webhook received and verified, the changes feed read), `manage doctor` and `manage directories list`
# run, and SIGTERM sent to each process. Cleans up what it started; keeps the base image (and the built one,
# for the layer cache) so that the next run builds in seconds.
#
#   bash scripts/container-test.sh            (as root; tests/image/test_container.py runs it in CI)
#
# Installs podman, runc and mmdebstrap from Debian's packages when missing. Environment:
#   ROSTER_CT_POSTGRES_URL   server to make the database on (default: TEST_DATABASE_URL's server, else
#                            postgres://postgres@127.0.0.1:5432/postgres)
#   ROSTER_CT_REBUILD_BASE=1 make the base again even when it exists
#   ROSTER_CT_DEBIAN_MIRROR  Debian mirror for the base (default http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
say() { printf 'container test: %s\n' "$*"; }
fail() { printf 'container test: FAILED: %s\n' "$*" >&2; exit 1; }
elapsed() { echo $(($(date +%s) - $1)); }

# --- tools: Debian's podman, runc and mmdebstrap ------------------------------------------------------------
missing=()
for tool in podman runc mmdebstrap; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || fail "needs ${missing[*]} (Debian's packages) and root to install them"
  say "installing Debian's ${missing[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
    || fail "could not install ${missing[*]}"
fi
[ "$(id -u)" = 0 ] || fail "runs as root (mmdebstrap and podman's root storage)"
bash scripts/bootstrap.sh   # the host's .venv: psycopg for the database, roster_client for the webhook

work=$(mktemp -d /tmp/roster-container-test.XXXXXX)
run_id=$$
names=()
database=""
redis_pid=""
cleanup() {
  local status=$?
  for name in "${names[@]}"; do podman rm -f -t 0 "$name" >/dev/null 2>&1 || true; done
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  if [ -n "$database" ]; then pg_admin "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" || true; fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# podman's default runtime (crun) cannot use the cgroups of some machines, and setting its default
# ulimits fails in some sandboxes: runc, and no default ulimits. Health checks are run by hand below
# (their timers need systemd).
printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' > "$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"
pod() { podman --runtime runc "$@"; }

# --- how this machine's pip reaches PyPI: its CA bundle, its index ---------------------------------------------
host_pip=(python3 -m pip)
[ -x .venv/bin/python ] && host_pip=(.venv/bin/python -m pip)
pip_config=$("${host_pip[@]}" config list 2>/dev/null || true)
pip_setting() {  # the value of a pip setting: its PIP_* variable, else pip's configuration files
  local variable=$1 key=$2
  if [ -n "${!variable:-}" ]; then echo "${!variable}"; return; fi
  printf '%s\n' "$pip_config" | sed -n "s/^[^.]*\.$key='\(.*\)'\$/\1/p" | tail -1
}
ca_bundle=$(pip_setting PIP_CERT cert)
[ -n "$ca_bundle" ] || ca_bundle=${SSL_CERT_FILE:-${REQUESTS_CA_BUNDLE:-}}
[ -z "$ca_bundle" ] || [ -f "$ca_bundle" ] || fail "pip's CA bundle $ca_bundle does not exist"
build_args=()
if [ -n "$ca_bundle" ]; then
  # The base gets the host's bundle (below); pip in the build uses the base's bundle, which then holds it.
  build_args+=(--build-arg PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
fi
# Only an index reachable from inside the build: http(s), not a folder of this machine.
index_url=$(pip_setting PIP_INDEX_URL index-url)
case "$index_url" in http://* | https://*) build_args+=(--build-arg "PIP_INDEX_URL=$index_url") ;; esac
extra_urls=""
for url in $(pip_setting PIP_EXTRA_INDEX_URL extra-index-url); do
  case "$url" in http://* | https://*) extra_urls="$extra_urls $url" ;; esac
done
[ -z "$extra_urls" ] || build_args+=(--build-arg "PIP_EXTRA_INDEX_URL=${extra_urls# }")
trusted=$(pip_setting PIP_TRUSTED_HOST trusted-host)
[ -z "$trusted" ] || build_args+=(--build-arg "PIP_TRUSTED_HOST=$trusted")

# --- the base: Debian 12 made from Debian's packages, the way Debian's slim images are made -------------------
mirror=${ROSTER_CT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${ROSTER_CT_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
mmdebstrap_args=(
  --variant=minbase --include=python3,python3-venv,ca-certificates
  # No documentation, manual pages or translations (what Debian's slim images leave out); the rule stays
  # in the base's dpkg configuration, so packages installed later leave them out too.
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
  --dpkgopt='path-exclude=/usr/share/linda/*' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/locale/locale.alias'
  # Merged /usr by symlinks, as debootstrap makes it, instead of the usrmerge package (and the perl it needs).
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  bookworm
)
sources=("deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security_mirror bookworm-security main")
ca_digest=none
[ -z "$ca_bundle" ] || ca_digest=$(sha256sum "$ca_bundle" | cut -d' ' -f1)
recipe=$(printf '%s\n' "${mmdebstrap_args[@]}" "${sources[@]}" "$ca_digest" | sha256sum | cut -c1-12)
base=localhost/roster-debian-base:bookworm-$recipe
base_seconds=0
if [ "${ROSTER_CT_REBUILD_BASE:-}" = 1 ] || ! pod image exists "$base"; then
  say "making the Debian 12 base $base"
  t=$(date +%s)
  hooks=()
  if [ -n "$ca_bundle" ]; then
    hooks+=(--customize-hook="upload $ca_bundle /usr/local/share/ca-certificates/build-host.crt"
      --customize-hook='chroot "$1" update-ca-certificates --fresh >/dev/null')
  fi
  mmdebstrap --quiet "${mmdebstrap_args[@]}" "${hooks[@]}" "$work/base.tar" "${sources[@]}" \
    || fail "mmdebstrap could not make the base"
  # Older bases of another recipe go; this one stays for the next runs.
  for old in $(pod images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/roster-debian-base:' || true); do
    [ "$old" = "$base" ] || pod rmi -f "$old" >/dev/null 2>&1 || true
  done
  pod import --quiet --change 'CMD ["/bin/bash"]' "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
  base_seconds=$(elapsed "$t")
  say "base made in ${base_seconds} s ($(pod image inspect --format '{{.Size}}' "$base") bytes)"
else
  say "base $base (cached)"
fi

# --- the image ------------------------------------------------------------------------------------------------
image=localhost/roster:container-test
previous=$(pod image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
say "building $image from the Dockerfile"
t=$(date +%s)
# --format docker keeps HEALTHCHECK (the OCI format has no field for it); --network=host for pip.
pod build --format docker --network=host --build-arg "BASE_IMAGE=$base" --build-arg "ROSTER_REVISION=$revision" \
  "${build_args[@]}" -t "$image" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "the build failed"; }
build_seconds=$(elapsed "$t")
current=$(pod image inspect --format '{{.Id}}' "$image")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then pod rmi "$previous" >/dev/null 2>&1 || true; fi

# --- what the image holds ------------------------------------------------------------------------------------
size=$(pod image inspect --format '{{.Size}}' "$image")
say "image built in ${build_seconds} s: $((size / 1000000)) MB ($size bytes)"
[ "$size" -le 300000000 ] || fail "the image is $size bytes, over 300 MB"
user=$(pod image inspect --format '{{.Config.User}}' "$image")
case "${user%%:*}" in "" | 0 | root) fail "the image runs as root (USER is '$user')" ;; esac
healthcheck=$(pod image inspect --format '{{json .Config.Healthcheck.Test}}' "$image")
case "$healthcheck" in *server.container*healthcheck*) ;; *) fail "no HEALTHCHECK probing /healthz: $healthcheck" ;; esac
inside() { pod run --rm --no-healthcheck --network=none --entrypoint /bin/sh "$image" -c "$1"; }
found=$(inside 'for tool in gcc cc c++ g++ clang make ld; do command -v "$tool" || true; done; ls -d /app/tests /app/bench /app/clients /app/docs 2>/dev/null || true; python -c "import importlib.util as u; [print(m) for m in (\"roster_client\", \"pytest\") if u.find_spec(m)]"')
[ -z "$found" ] || fail "the image holds what it must not: $found"
[ "$(inside 'id -u')" != 0 ] || fail "the image's processes run as root"
say "inspected: user $user, HEALTHCHECK $healthcheck, no compiler, tests, bench or client library"

# --- PostgreSQL database and Redis of this run -------------------------------------------------------------
pg_server=${ROSTER_CT_POSTGRES_URL:-}
if [ -z "$pg_server" ]; then
  if [ -n "${TEST_DATABASE_URL:-}" ]; then pg_server="${TEST_DATABASE_URL%/*}/postgres"; else pg_server=postgres://postgres@127.0.0.1:5432/postgres; fi
fi
pg_admin() {
  .venv/bin/python -c 'import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as c: c.execute(sys.argv[2])' "$pg_server" "$1"
}
database=roster_container_test_$run_id
pg_admin "CREATE DATABASE \"$database\"" || fail "could not make a database on $pg_server"
database_url="${pg_server%/*}/$database"
free_port() { .venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
redis_port=$(free_port)
command -v redis-server >/dev/null 2>&1 || fail "needs redis-server"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --logfile "$work/redis.log" &
redis_pid=$!
web_port=$(free_port)
api_key=container-test-api-key

# --- the containers: read-only root filesystem, a tmpfs on /tmp, no capabilities -------------------------------
secret() { .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(40))'; }
# Production settings, so that `manage doctor` has nothing to report; the receiver runs on this machine's
# loopback, hence WEBHOOK_ALLOW_PRIVATE_NETWORKS (a warning only).
common=(--network=host --read-only --tmpfs /tmp --cap-drop=all --security-opt=no-new-privileges
  -e "DATABASE_URL=$database_url" -e "CELERY_BROKER_URL=redis://127.0.0.1:$redis_port/0"
  -e "SECRET_KEY=$(secret)" -e "DB_ENCRYPTION_KEY=$(secret)" -e "API_KEYS=$api_key"
  -e "PORT=$web_port" -e WEB_WORKERS=2 -e ALLOWED_HOSTS=127.0.0.1,roster.example.test
  -e EXTERNAL_URL=https://roster.example.test -e WEBHOOK_ALLOW_PRIVATE_NETWORKS=true)
# Health checks are run by hand (podman's timers for them need systemd).
once=(--rm --no-healthcheck "${common[@]}")
logs() {
  for name in "${names[@]}"; do
    echo "--- $name" >&2
    pod logs --tail 40 "$name" >&2 2>&1 || true
  done
}
t=$(date +%s)
# A missing required setting stops the process with a line naming it (status 78).
status=0
message=$(pod run --rm --no-healthcheck --network=none -e "DATABASE_URL=$database_url" "$image" web 2>&1) || status=$?
[ "$status" = 78 ] && [[ "$message" == *SECRET_KEY* ]] || fail "without SECRET_KEY: status $status, '$message'"

names+=("roster-ct-migrate-$run_id")
pod run --name "roster-ct-migrate-$run_id" --no-healthcheck "${common[@]}" "$image" migrate >"$work/migrate.log" 2>&1 \
  || { cat "$work/migrate.log" >&2; fail "migrate failed"; }
for process in web worker beat; do
  names+=("roster-ct-$process-$run_id")
  pod run -d --name "roster-ct-$process-$run_id" --health-interval=disable "${common[@]}" "$image" "$process" \
    >/dev/null 2>"$work/run-$process.log" || { cat "$work/run-$process.log" >&2; fail "could not start $process"; }
done
for _ in $(seq 1 60); do
  curl -fsS "http://127.0.0.1:$web_port/healthz" >/dev/null 2>&1 && break
  sleep 1
done
curl -fsS "http://127.0.0.1:$web_port/healthz" >/dev/null || { logs; fail "the web server did not answer /healthz"; }
pod healthcheck run "roster-ct-web-$run_id" >/dev/null || { logs; fail "the image's health check fails on the web container"; }
pod healthcheck run "roster-ct-worker-$run_id" >/dev/null || { logs; fail "the image's health check fails on the worker container"; }
say "migrate, web, worker and beat started in $(elapsed "$t") s; the health check passes"

# --- driven from outside ---------------------------------------------------------------------------------------
result=$(.venv/bin/python -m tests.image.drive --url "http://127.0.0.1:$web_port" --api-key "$api_key") \
  || { logs; fail "driving Roster failed"; }
directory_id=$(.venv/bin/python -c 'import json, sys; print(json.loads(sys.argv[1])["directory_id"])' "$result")
say "directory, SCIM push, signed webhook verified, changes feed: $result"
listing=$(pod run "${once[@]}" "$image" manage directories list 2>&1) || { echo "$listing" >&2; fail "manage directories list failed"; }
[[ "$listing" == *"$directory_id"* ]] || fail "manage directories list does not show $directory_id: $listing"
# doctor passes once beat has had the worker run a sweep (every 30 s, the first 30 s after beat started).
for attempt in $(seq 1 8); do
  status=0
  doctor=$(pod run "${once[@]}" "$image" manage doctor --worker-timeout 5 2>&1) || status=$?
  [ "$status" != 0 ] && grep -q '^FAIL  beat ' <<<"$doctor" || break
  sleep 5
done
[ "$status" = 0 ] || { echo "$doctor" >&2; logs; fail "manage doctor reports a problem"; }
say "manage directories list and manage doctor pass (doctor after $attempt attempt(s))"

# --- SIGTERM: each process stops by itself, 0 or 143, within 30 s ------------------------------------------------
for process in web worker beat; do
  name=roster-ct-$process-$run_id
  t=$(date +%s)
  pod kill --signal TERM "$name" >/dev/null
  code=$(timeout 40 podman --runtime runc wait "$name" || echo timeout)
  seconds=$(elapsed "$t")
  case "$code" in 0 | 143) ;; *) logs; fail "$process after SIGTERM: exit $code" ;; esac
  [ "$seconds" -le 30 ] || fail "$process took $seconds s to stop"
  say "$process stopped on SIGTERM in $seconds s, exit $code"
done
if pod logs "roster-ct-web-$run_id" 2>&1 | grep -q Traceback || pod logs "roster-ct-worker-$run_id" 2>&1 | grep -q Traceback; then
  logs
  fail "a traceback in the logs"
fi
say "PASSED in $(elapsed "$started") s (base ${base_seconds} s, build ${build_seconds} s, image $((size / 1000000)) MB)"
