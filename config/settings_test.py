"""Settings for the test suite: the base settings with fast hashing and a known database.

Under CI=true the suite must run on PostgreSQL and a real broker, and fail (not skip) when they
are missing; locally it falls back to SQLite unless TEST_DATABASE_URL says otherwise.
"""

from __future__ import annotations

import os

# The base settings refuse to start without SECRET_KEY when DEBUG is off; tests provide one.
os.environ.setdefault("SECRET_KEY", "roster-test-secret-key-not-for-production")
os.environ.setdefault("DEBUG", "false")

from django.core.exceptions import ImproperlyConfigured  # noqa: E402

from config.env import BASE_DIR, env  # noqa: E402
from config.settings import *  # noqa: E402, F403
from config.settings import DATABASES  # noqa: E402

CI = env.bool("CI", default=False)

_test_db = env.str("TEST_DATABASE_URL", default="")
if CI and not _test_db:
    _test_db = "postgres://postgres@127.0.0.1:5432/roster"
if _test_db:
    DATABASES = {"default": env.db_url_config(_test_db)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        # The production binding mode and prepared statements (config/settings.py), so the suite runs the
        # SQL as it is sent there.
        _binding = env.bool("DB_SERVER_SIDE_BINDING", default=True)
        _threshold = env.int("DB_PREPARE_THRESHOLD", default=5)
        DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = _binding
        DATABASES["default"]["OPTIONS"]["prepare_threshold"] = _threshold if _binding and _threshold > 0 else None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not Django's shared in-memory database: background delivery threads and the live
    # server then wait on SQLite's busy timeout instead of failing with "database table is locked".
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / f"test-{os.getpid()}.sqlite3")}
if CI and DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("CI=true requires PostgreSQL (TEST_DATABASE_URL must be a postgres:// URL).")

# Broker for tests that run a real Celery worker; CI must have one, locally those tests may skip.
TEST_BROKER_URL = env.str("TEST_BROKER_URL", default="redis://127.0.0.1:6379/15")

ADMIN_BCRYPT_COST = 4
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
EXTERNAL_URL = "http://testserver"
WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
WEBHOOK_TIMEOUT = 3.0
CELERY_BROKER_URL = None
API_KEYS = ["test-env-api-key"]
ADMIN_ROOT_TOKEN = None
ADMIN_JWT_SECRET = "test-admin-jwt-secret-with-enough-length-32b"
WEBHOOK_URL = None
WEBHOOK_SECRET = None
# SCIM health counters and request-log entries are written when a test asks
# (directories.activity.recorder.flush), not by a thread that would write into the next test's database.
SCIM_ACTIVITY_FLUSH_SECONDS = 0
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# The suite runs from a checkout, without collectstatic: there is no collected folder for WhiteNoise to
# serve (it would warn once per test client that builds the middleware chain). The live server of the
# browser tests serves static files from the finders (pytest-django's StaticFilesHandler).
STATIC_ROOT = None
