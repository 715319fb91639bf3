"""Writes on directories and API keys, split by topic: a directory's life (`directory`: create, change,
delete), its secrets (`secrets`; its OAuth client's in `oauth_secrets`), the REST API's keys (`api_keys`).
Every surface (REST, admin API, portal,
the setup page, manage.py) calls these.

What the other apps call is re-exported here. Inside this package, modules import each other by their own
names (`directories.services.secrets`), never through this one, which imports them all.
"""

from __future__ import annotations

from directories.services.api_keys import api_key_create, api_key_revoke
from directories.services.directory import (
    ALLOWED_TYPES,
    NAME_MAX_LENGTH,
    SCIM_RATE_LIMIT_MAX,
    SCIM_RATE_LIMIT_MIN,
    SCIM_UPDATABLE_FIELDS,
    UPDATABLE_FIELDS,
    directory_create,
    directory_delete,
    directory_update,
)
from directories.services.oauth_secrets import (
    EXPIRES_IN_DAYS_DEFAULT,
    EXPIRES_IN_DAYS_MAX,
    EXPIRES_IN_DAYS_MIN,
    directory_scim_oauth_secret_add,
    directory_scim_oauth_secret_revoke,
    directory_scim_oauth_secret_rotate,
    scim_oauth_secret_add_input,
    scim_oauth_secret_rotation_input,
    scim_oauth_secret_used,
)
from directories.services.secrets import (
    GRACE_SECONDS_MAX,
    directory_previous_scim_secret_revoke,
    directory_scim_secret_rotate,
    directory_webhook_secret_rotate,
    grace_seconds_check,
    scim_secret_rotation_input,
    secret_generate,
)

__all__ = [
    "EXPIRES_IN_DAYS_DEFAULT",
    "EXPIRES_IN_DAYS_MAX",
    "EXPIRES_IN_DAYS_MIN",
    "ALLOWED_TYPES",
    "GRACE_SECONDS_MAX",
    "NAME_MAX_LENGTH",
    "SCIM_RATE_LIMIT_MAX",
    "SCIM_RATE_LIMIT_MIN",
    "SCIM_UPDATABLE_FIELDS",
    "UPDATABLE_FIELDS",
    "api_key_create",
    "api_key_revoke",
    "directory_create",
    "directory_delete",
    "directory_previous_scim_secret_revoke",
    "directory_scim_oauth_secret_add",
    "directory_scim_oauth_secret_revoke",
    "directory_scim_oauth_secret_rotate",
    "directory_scim_secret_rotate",
    "directory_update",
    "directory_webhook_secret_rotate",
    "grace_seconds_check",
    "scim_oauth_secret_add_input",
    "scim_oauth_secret_rotation_input",
    "scim_oauth_secret_used",
    "scim_secret_rotation_input",
    "secret_generate",
]
