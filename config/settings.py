"""Roster settings. Every knob is an environment variable read through config.env (contract §2)."""

from __future__ import annotations

import logging.config

from django.core.exceptions import ImproperlyConfigured

from config.env import BASE_DIR, env, require
from core import metricsdir
from core.logformat import logging_config
from core.ratelimit import storage_url_check, storage_url_default
from core.version import VERSION
from setuplinks.headers import frame_ancestors_check

DEBUG = env.bool("DEBUG", default=False)

if DEBUG:
    # A dev-only key; never used when DEBUG is off, where SECRET_KEY is required.
    SECRET_KEY = env.str("SECRET_KEY", default="roster-dev-insecure-secret-key-do-not-use-in-production")
else:
    SECRET_KEY = require("SECRET_KEY", "Django needs it unless DEBUG is on")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])

EXTERNAL_URL = env.str("EXTERNAL_URL", default="http://localhost:8000").rstrip("/")

# Comma-separated API keys accepted on /api/v1 in addition to keys made with `manage.py apikey`.
API_KEYS = [k.strip() for k in env.list("API_KEYS", default=[]) if k.strip()]

ADMIN_ROOT_TOKEN = env.str("ADMIN_ROOT_TOKEN", default="") or None
if ADMIN_ROOT_TOKEN and not DEBUG:
    ADMIN_JWT_SECRET = require("ADMIN_JWT_SECRET", "ADMIN_ROOT_TOKEN is set and DEBUG is off")
else:
    ADMIN_JWT_SECRET = env.str("ADMIN_JWT_SECRET", default="") or SECRET_KEY
ADMIN_JWT_LIFETIME_SECONDS = env.int("ADMIN_JWT_LIFETIME_SECONDS", default=8 * 3600)
ADMIN_BCRYPT_COST = env.int("ADMIN_BCRYPT_COST", default=12)

DB_ENCRYPTION_KEY = env.str("DB_ENCRYPTION_KEY", default="") or None

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or None
WEBHOOK_TIMEOUT = env.float("WEBHOOK_TIMEOUT", default=10.0)
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=DEBUG)
# Global receiver of directory-level events (dsync.created, dsync.deleted, ...).
WEBHOOK_URL = env.str("WEBHOOK_URL", default="") or None
WEBHOOK_SECRET = env.str("WEBHOOK_SECRET", default="") or None
WEBHOOK_LOG_RETENTION_DAYS = env.int("WEBHOOK_LOG_RETENTION_DAYS", default=7)
EVENT_RETENTION_DAYS = env.int("EVENT_RETENTION_DAYS", default=30)

# The most resources one SCIM list page returns (advertised as filter.maxResults).
SCIM_MAX_RESULTS = env.int("SCIM_MAX_RESULTS", default=1000)

# Setup links (contract §3.1): the origins allowed to embed the setup page in a frame (its CSP
# frame-ancestors): 'none' (the default), or 'self' and origins such as https://app.example.com, separated
# by commas. Anything else stops start-up.
SETUP_FRAME_ANCESTORS = frame_ancestors_check(env.str("SETUP_FRAME_ANCESTORS", default="'none'"))

# SCIM activity (contract §4.1): how long the SCIM request log is kept, how long without a request makes
# a connected directory `silent`, and how often each web process writes the health counters and log
# entries it gathered (directories.activity.recorder; 0 starts no background thread: they are then
# written at exit or when asked, which is what the test suite does).
SCIM_LOG_RETENTION_DAYS = env.int("SCIM_LOG_RETENTION_DAYS", default=7)
SCIM_SILENT_DAYS = env.int("SCIM_SILENT_DAYS", default=7)
SCIM_ACTIVITY_FLUSH_SECONDS = env.float("SCIM_ACTIVITY_FLUSH_SECONDS", default=2.0)
# Seconds a SCIM access token of the OAuth client lives (contract §4.3; Microsoft asks for 1 to 6 hours).
SCIM_OAUTH_TOKEN_SECONDS = env.int("SCIM_OAUTH_TOKEN_SECONDS", default=3600)
if not 3600 <= SCIM_OAUTH_TOKEN_SECONDS <= 21600:
    raise ImproperlyConfigured(
        f"SCIM_OAUTH_TOKEN_SECONDS must be from 3600 to 21600 (seconds an access token lives), "
        f"not {SCIM_OAUTH_TOKEN_SECONDS}."
    )

# Rate limits (contract §4.5, core.ratelimit): SCIM requests per minute per directory (a directory's
# scim_rate_limit overrides it) and REST requests per minute per API key, 0 for no limit; and where every
# node and process counts them: a Redis URL (the broker's when it is Redis), or memory:// (each process
# counts alone).
SCIM_RATE_LIMIT = env.int("SCIM_RATE_LIMIT", default=3000)
API_RATE_LIMIT = env.int("API_RATE_LIMIT", default=6000)
if SCIM_RATE_LIMIT < 0 or API_RATE_LIMIT < 0:
    raise ImproperlyConfigured("SCIM_RATE_LIMIT and API_RATE_LIMIT are requests per minute: 0 (no limit) or more.")
RATE_LIMIT_STORAGE_URL = storage_url_check(
    env.str("RATE_LIMIT_STORAGE_URL", default="") or storage_url_default(CELERY_BROKER_URL)
)

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "audit",
    "directories",
    "scim",
    "webhooks",
    "history",
    "adminauth",
    "adminapi",
    "restapi",
    "portal",
    "operations",
    "setuplinks",
]

MIDDLEWARE = [
    # Outermost: every answer carries X-Request-Id, every log line of the request its id, every 4xx/5xx
    # leaves a log line, and the request is counted for /metrics (config/requestscope.py).
    "config.requestscope.RequestScopeMiddleware",
    # The RateLimit headers (and Retry-After) of a request a rate limit counted (core/ratelimit.py).
    "core.ratelimit.HeadersMiddleware",
    # Every answer under /setup/ gets its security headers (no-store, CSP frame-ancestors, ...), whatever
    # made it, and no X-Frame-Options (setuplinks/headers.py).
    "setuplinks.middleware.SetupHeadersMiddleware",
    # Every answer under /portal/ gets its Content-Security-Policy: Roster's own scripts and styles only
    # (portal/middleware.py).
    "portal.middleware.PortalHeadersMiddleware",
    # Then: REST and admin API answers get X-Request-Id, and no exception leaves them as HTML or a
    # bare 500 (a lost database is a 503 with Retry-After).
    "config.errorpages.ApiErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
# Requests under SCIM_PATH_PREFIX (config.wsgi) get this shorter chain: SCIM authenticates with a
# bearer token and renders JSON, so it needs no session, CSRF, user, messages, static files or frame
# header. Security headers and the ALLOWED_HOSTS check (CommonMiddleware) stay. With this default
# chain, scim/http/wsgi.py does that work itself without Django's handler; any other chain runs as listed.
SCIM_PATH_PREFIX = "/api/scim/"
SCIM_MIDDLEWARE = [
    "config.requestscope.RequestScopeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

(BASE_DIR / "var").mkdir(exist_ok=True)
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'roster.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Persistent connections: a new PostgreSQL connection per request costs several ms.
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=600)
    # No health check: it costs a `SELECT 1` round trip on every request (kept for speed: bench/README.md,
    # "Code kept for speed", "No connection health check"), and Django
    # already discards a connection that failed during a request when that request ends.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=False)
    # Server-side parameter binding: psycopg sends the SQL text with $n placeholders and the values apart.
    # Off (DB_SERVER_SIDE_BINDING=false, which also turns prepared statements off) behind a PgBouncer in
    # transaction mode older than 1.21, which cannot keep prepared statements.
    server_side_binding = env.bool("DB_SERVER_SIDE_BINDING", default=True)
    DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = server_side_binding
    # Prepared statements: psycopg prepares a statement once it has run DB_PREPARE_THRESHOLD times on a
    # connection, so PostgreSQL parses and plans each hot SCIM statement once per connection rather than
    # on every request. Django turns them off unless asked (prepare_threshold None), which it does for
    # the sake of connection poolers; 0 turns them off here too.
    prepare_threshold = env.int("DB_PREPARE_THRESHOLD", default=5)
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = (
        prepare_threshold if server_side_binding and prepare_threshold > 0 else None
    )
else:
    DATABASES["default"].setdefault("OPTIONS", {})
    # WAL + a busy timeout lets the dev server and in-process webhook threads share the file.
    DATABASES["default"]["OPTIONS"].setdefault("timeout", 20)
    DATABASES["default"]["OPTIONS"].setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    DATABASES["default"]["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS: list[dict] = []

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# The SCIM endpoint caps bodies itself (413, RFC 7644 error); this keeps Django's own parser in line.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

LOGIN_URL = "/portal/login"
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_HTTPONLY = True
# Portal sessions last a working day, not Django's default two weeks.
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=12 * 3600)
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# A CSRF refusal on an API path answers in that surface's format (browser paths keep Django's page).
CSRF_FAILURE_VIEW = "config.errorpages.csrf_failure"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "core.envelope.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Roster REST API",
    "DESCRIPTION": "Directory sync: directories, users and groups pushed by identity providers over SCIM.",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # Three lists answer a `status` of their own: a setup link's gets a name of its own.
    "ENUM_NAME_OVERRIDES": {
        "SetupLinkStatusEnum": "setuplinks.models.SetupLinkStatus.values",
        "WebhookFormatEnum": "webhooks.models.EndpointFormat.values",
    },
}

# Celery: with no broker, tasks run in-process after commit (webhooks.services.draining decides how,
# webhooks.services.drain_pool runs them).
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
# The worker's pool, for `celery -A config worker` and `python -m server.worker` alike: threads, because a
# delivery spends its time waiting on the receiver and the database, and threads share one process's
# memory where prefork (Celery's default) forks a process per slot. 4 threads by default.
CELERY_WORKER_POOL = env.str("CELERY_WORKER_POOL", default="threads")
CELERY_WORKER_CONCURRENCY = env.int("CELERY_WORKER_CONCURRENCY", default=4)
CELERY_TASK_TIME_LIMIT = 120
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- operations (contract §7.1) ---------------------------------------------------------------------------
# `plain` (for people, the default) or `json` (one object per line: time, level, logger, message,
# request_id, directory_id where known). granian's and Celery's own lines follow it too
# (server/web.py, config/celery.py).
LOG_FORMAT = env.str("LOG_FORMAT", default="plain").strip().lower()
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}.")
# GET /metrics answers only with `Authorization: Bearer <METRICS_TOKEN>`, and 404 while it is unset
# (then nothing is counted either).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="") or None
# The node's metrics files (core/metricsdir.py): one folder per node, best on a tmpfs.
METRICS_DIR = env.str("METRICS_DIR", default="") or str(metricsdir.default_base())
# Tells builds of one version apart in roster_build_info (e.g. the deployed git commit).
ROSTER_REVISION = env.str("ROSTER_REVISION", default="")

LOGGING = logging_config(LOG_FORMAT, env.str("LOG_LEVEL", default="INFO"))
# Applied here rather than by django.setup(), which would first apply Django's DEFAULT_LOGGING: its
# mail_admins handler imports the debug and generic views (with the template tags and the paginator) into
# every process (about 1 MB of the Celery worker's PSS), for mail Roster never sends (no ADMINS), and its
# console handler doubled the django.* lines under DEBUG. Its one other effect, django.* held at INFO, is
# kept in core.logformat.logging_config.
LOGGING_CONFIG = None
logging.config.dictConfig(LOGGING)

# (Without DB_ENCRYPTION_KEY, operations.apps warns at start, once logging is configured in LOG_FORMAT.)
AUTH_USER_MODEL = "adminauth.AdminUser"

# Admin API and portal sign-in (adminauth.throttle): failed attempts allowed per client address in a sliding
# window before answers turn 429; and how many reverse proxies in front of Roster append to
# X-Forwarded-For (0: REMOTE_ADDR is the client, a client-sent X-Forwarded-For is ignored).
ADMIN_LOGIN_MAX_FAILURES = env.int("ADMIN_LOGIN_MAX_FAILURES", default=10)
ADMIN_LOGIN_FAILURE_WINDOW_SECONDS = env.int("ADMIN_LOGIN_FAILURE_WINDOW_SECONDS", default=900)
# The portal's sign-in also counts failures per email tried, from any address (adminauth.throttle).
ADMIN_LOGIN_MAX_FAILURES_PER_EMAIL = env.int("ADMIN_LOGIN_MAX_FAILURES_PER_EMAIL", default=5)
# The token endpoint of a directory's OAuth client also counts wrong client secrets per directory, from any
# address, within the same window (adminauth.throttle; contract §4.3).
SCIM_OAUTH_MAX_FAILURES_PER_DIRECTORY = env.int("SCIM_OAUTH_MAX_FAILURES_PER_DIRECTORY", default=50)
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
