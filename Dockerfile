# Roster's image: every process of docs/deployment.md, picked by the first argument (server/container.py):
#   docker build -t roster .            (podman: podman build --format docker -t roster ., to keep HEALTHCHECK)
#   docker run --read-only --tmpfs /tmp -e DATABASE_URL=... -e SECRET_KEY=... roster web|worker|beat|migrate|manage …
#
# BASE_IMAGE: any Debian 12 image whose python3 is 3.11, the official slim Python image (its interpreter in
# /usr/local/bin) or one made from Debian's own packages (python3 in /usr/bin, python3-venv installed), as
# scripts/container-test.sh makes. Both stages use it, so the virtualenv built in the first one finds its
# interpreter at the same path in the second.
ARG BASE_IMAGE=python:3.11-slim-bookworm

# --- builder: the virtualenv, the collected static files, the compiled bytecode ------------------------------
FROM ${BASE_IMAGE} AS builder

# pip's settings for a build behind a proxy or a private index, given with --build-arg and otherwise unset.
# They live in this stage only, which the final image does not keep.
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST
ARG PIP_CERT
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore

# Debian's python3 makes a virtualenv with pip only when python3-venv (ensurepip) is installed; the
# official image has it built in.
RUN set -eu; \
    python3 -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "BASE_IMAGE needs Python 3.11, not " + sys.version)'; \
    if ! python3 -c 'import ensurepip' 2>/dev/null; then \
      apt-get update; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv; \
    fi; \
    python3 -m venv /venv

# Wheels only: every requirement has one for Linux on CPython 3.11, so no compiler is needed, in this
# stage either. Then what only installing needed goes: pip and setuptools, and the translations' sources
# and catalogues (Roster runs with USE_I18N off and never loads them). Bytecode is compiled here, for the
# packages, and below, for Roster, in "unchecked-hash" mode (used without comparing it with the source's
# timestamp: the image never changes), because the processes cannot write .pyc files on a read-only
# filesystem (PYTHONDONTWRITEBYTECODE) and would otherwise compile every module they import at each start.
COPY requirements.txt /tmp/requirements.txt
RUN set -eu; \
    /venv/bin/pip install --only-binary=:all: -r /tmp/requirements.txt; \
    /venv/bin/pip uninstall -y setuptools pip; \
    find /venv -path '*/locale/*' \( -name '*.po' -o -name '*.mo' \) -delete; \
    find /venv -name __pycache__ -prune -exec rm -rf {} +; \
    /venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash /venv/lib/python3.11/site-packages

# The build context is filtered by .dockerignore; what must never reach the image is removed here as well.
WORKDIR /app
COPY . .
RUN set -eu; \
    rm -rf tests bench clients docs scripts .ci requirements-dev.txt; \
    DEBUG=false SECRET_KEY=collectstatic-only DB_ENCRYPTION_KEY=collectstatic-only /venv/bin/python manage.py collectstatic --noinput --verbosity 0; \
    /venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash /app

# --- the image ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}

ARG ROSTER_REVISION=""
ENV PATH=/venv/bin:$PATH \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    HOME=/tmp \
    PORT=8000 \
    METRICS_DIR=/tmp/roster-metrics \
    ROSTER_REVISION=${ROSTER_REVISION}

# A user with no home and no shell; files stay root's, so the processes cannot change their code.
RUN groupadd --gid 10001 roster \
    && useradd --uid 10001 --gid roster --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin roster

COPY --from=builder /venv /venv
COPY --from=builder /app /app
WORKDIR /app
USER 10001:10001
EXPOSE 8000

# Probes /healthz when this container runs the web server (a worker or beat has no port: it passes).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-m", "server.container", "healthcheck"]
ENTRYPOINT ["python", "-m", "server.container"]
CMD ["web"]
