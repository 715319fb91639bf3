"""Directories, API keys, and the users/groups/memberships that identity providers push.

Uniqueness lives in the database: `user_name_key` and `display_name_key` hold the comparison form
of userName/displayName (core.comparison: NFC + casefold, RFC 7643 caseExact=false, RFC 7644 §7.8)
and carry the per-directory unique constraints, so concurrent creates cannot both win. The original value is kept
exactly as sent (`user_name`, `display_name`, and `raw`).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models

from core.crypto import EncryptedTextField, secret_digest
from directories.guard.rules import guard_defaults


class DirectoryType(models.TextChoices):
    OKTA = "okta-scim-v2", "Okta"
    AZURE = "azure-scim-v2", "Microsoft Entra ID"
    ONELOGIN = "onelogin-scim-v2", "OneLogin"
    JUMPCLOUD = "jumpcloud-scim-v2", "JumpCloud"
    GENERIC = "generic-scim-v2", "Generic SCIM 2.0"


class Directory(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    tenant = models.CharField(max_length=200)
    product = models.CharField(max_length=200)
    type = models.CharField(max_length=32, choices=DirectoryType.choices, default=DirectoryType.GENERIC)
    log_webhook_events = models.BooleanField(default=False)
    deactivated = models.BooleanField(default=False)
    scim_secret = EncryptedTextField()
    webhook_url = models.CharField(max_length=2048, blank=True, default="")
    webhook_secret = EncryptedTextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # --- mapped attributes and roles (contract §3): read by directories.rendering.user_data -------
    # {"<name>": "<SCIM attribute path>"} → each User's custom_attributes.
    attribute_map = models.JSONField(default=dict)
    # {"<group displayName or id>": "<role>"} → each User's roles.
    role_map = models.JSONField(default=dict)
    # SCIM activity (contract §4.1): keep successful SCIM requests in the request log too (failed ones
    # always are), and the secret a rotation with grace_seconds left working until its expiry ("" when
    # there is none; a past expiry means none, the sweep then clears it).
    log_scim_requests = models.BooleanField(default=False)
    previous_scim_secret = EncryptedTextField(blank=True, default="")
    previous_scim_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # OAuth 2.0 client credentials for SCIM (contract §4.3). The client's id is the directory's id; of its
    # secret only the SHA-256 digest is kept ("" until one is made: OAuth is off until then). Access tokens
    # are MACed with a key derived from this digest (scim/tokens.py), so a new secret ends every earlier
    # token. `scim_static_secret_enabled` false turns the bearer secret above off (and a kept previous one).
    scim_oauth_secret_hash = models.CharField(max_length=64, blank=True, default="")
    scim_oauth_secret_created_at = models.DateTimeField(null=True, blank=True)
    scim_static_secret_enabled = models.BooleanField(default=True)
    # The deprovision guard (contract §4.2, directories.guard): its setting, when it tripped (set while any
    # change is held, so the SCIM reads, which get this row with the authentication, overlay held changes
    # only then), and when it last re-armed (deprovisions before that no longer count).
    deprovision_guard = models.JSONField(default=guard_defaults)
    guard_tripped_at = models.DateTimeField(null=True, blank=True)
    guard_armed_at = models.DateTimeField(null=True, blank=True)
    # Its rate limit (contract §4.5, core.ratelimit): SCIM requests per minute, 1500…600000; 0 for none;
    # null for the SCIM_RATE_LIMIT setting.
    scim_rate_limit = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["tenant", "product", "created_at", "id"], name="directory_tenant_product")]

    def __str__(self) -> str:
        return f"{self.name} ({self.tenant}/{self.product})"

    @property
    def has_webhook(self) -> bool:
        return bool(self.webhook_url)

    @property
    def scim_oauth_enabled(self) -> bool:
        """Whether the directory's OAuth client has a secret, so its token endpoint issues tokens."""
        return bool(self.scim_oauth_secret_hash)

    def previous_scim_secret_valid(self, now: datetime) -> bool:
        """Whether the secret a rotation with grace kept still authenticates at `now`."""
        expires = self.previous_scim_secret_expires_at
        return bool(self.previous_scim_secret) and expires is not None and now < expires


class ApiKey(models.Model):
    """A REST API key made with `manage.py apikey create`. Only a SHA-256 digest is stored."""

    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, help_text="First characters of the key, to tell keys apart.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


def api_key_hash(key: str) -> str:
    """What is stored of an API key, and looked up by: its SHA-256 digest."""
    return secret_digest(key)


class DirectoryUser(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: every index of Meta.indexes and the unique constraint start with it, and serve
    # its lookups (a directory's users, the cascade when a directory is deleted). One index less to write
    # per user insert and update.
    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="users", db_index=False)
    user_name = models.CharField(max_length=512)
    user_name_key = models.CharField(max_length=512)
    external_id = models.CharField(max_length=512, null=True, blank=True)
    first_name = models.CharField(max_length=512, blank=True, default="")
    last_name = models.CharField(max_length=512, blank=True, default="")
    email = models.CharField(max_length=512, blank=True, default="")
    # `email` in comparison form (core.comparison): the REST list's case-insensitive `email` filter.
    email_key = models.CharField(max_length=512, blank=True, default="")
    active = models.BooleanField(default=True)
    raw = models.JSONField(default=dict)
    # `raw` in the shape SCIM filters and sortBy read: keys lower-cased, caseExact=false strings folded,
    # every value a list (scim/protocol/documents/filterdoc.py). Derived on every write.
    filter_doc = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The user has changes held by the deprovision guard (HeldChange): the identity provider's view of it is
    # the last of them, and its later SCIM changes are held behind them. On the row itself so that a write
    # that read the user before a change was held fails its condition (scim.storage) instead of slipping past.
    held = models.BooleanField(default=False)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["directory", "user_name_key"], name="user_name_unique_per_directory"),
        ]
        indexes = [
            models.Index(fields=["directory", "created_at", "id"], name="user_directory_order"),
            models.Index(fields=["directory", "external_id"], name="user_directory_external_id"),
            models.Index(fields=["directory", "email_key"], name="user_directory_email_key"),
        ]

    # Not a column: the user's groups as [(group id, displayName)] in membership order, set by the reads
    # that bring them along (directories.selectors.user_groups_attach, SCIM's storage); None until read.
    member_of: list[tuple[uuid.UUID, str]] | None = None

    def __str__(self) -> str:
        return self.user_name


class DirectoryGroup(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own, as DirectoryUser.directory: the indexes below start with it.
    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="groups", db_index=False)
    display_name = models.CharField(max_length=512)
    display_name_key = models.CharField(max_length=512)
    external_id = models.CharField(max_length=512, null=True, blank=True)
    raw = models.JSONField(default=dict)
    filter_doc = models.JSONField(default=dict)  # as DirectoryUser.filter_doc
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    members = models.ManyToManyField(DirectoryUser, through="GroupMembership", related_name="groups")

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["directory", "display_name_key"], name="group_display_name_unique_per_directory"
            ),
        ]
        indexes = [
            models.Index(fields=["directory", "created_at", "id"], name="group_directory_order"),
            models.Index(fields=["directory", "external_id"], name="group_directory_external_id"),
        ]

    def __str__(self) -> str:
        return self.display_name


class GroupMembership(models.Model):
    """One user in one group. Both sides belong to the same directory (checked by the services)."""

    # Neither key has an index of its own: `membership_unique` (group, user) serves a group's members and
    # `membership_user` a user's groups. Two index entries per member added instead of four.
    group = models.ForeignKey(DirectoryGroup, on_delete=models.CASCADE, related_name="memberships", db_index=False)
    user = models.ForeignKey(DirectoryUser, on_delete=models.CASCADE, related_name="memberships", db_index=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="membership_unique")]
        indexes = [models.Index(fields=["user"], name="membership_user")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.group_id}"


class UserTally(models.Model):
    """How many users were ever created in and deleted from a directory, summed over a few rows.

    On PostgreSQL, statement triggers (migration 0003) keep these rows as users are inserted and
    deleted, by any path: SCIM, bulk inserts, the cascade of a directory delete. A list page then
    reads `SUM(created - deleted)` over at most `SHARDS` rows instead of counting the directory's
    users, and the pair of sums changes whenever the set of users does, which is what tells
    `directories.pages` that its position marks are stale. Each database session adds to its own shard
    (backend pid modulo `SHARDS`), so concurrent creates in one directory do not queue on one row.
    A counter kept by the database, not business logic: nothing else is decided here. Other
    databases (SQLite) have no triggers and no rows here; their pages count.

    The foreign key is declared in SQL (deferrable, ON DELETE CASCADE) so that deleting a directory
    drops its tally after the cascade of its users has updated it; Django leaves the rows alone.
    """

    SHARDS = 16  # written as a literal in the triggers of migration 0003

    pk = models.CompositePrimaryKey("directory", "shard")
    directory = models.ForeignKey(
        Directory, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    shard = models.SmallIntegerField()
    created = models.BigIntegerField(default=0)
    deleted = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.directory_id}/{self.shard}: +{self.created} -{self.deleted}"


# --- SCIM activity (contract §4.1): the request log and the health of each directory's connection ---------


class HealthState(models.TextChoices):
    """The states of a directory's SCIM connection, in the order the rule tries them (first match wins,
    directories.activity.state)."""

    DEACTIVATED = "deactivated", "Deactivated"
    INVALID_CREDENTIALS = "invalid_credentials", "Invalid credentials"
    THROTTLED = "throttled", "Throttled"
    FAILING = "failing", "Failing"
    SILENT = "silent", "Silent"
    HEALTHY = "healthy", "Healthy"
    NEVER_CONNECTED = "never_connected", "Never connected"


class ScimHealth(models.Model):
    """What the SCIM requests naming one directory add up to: the facts its health state is decided
    from (directories.activity.state), its 24-hour counters and when each of its secrets was last used.

    Written by the web processes' batched flushes (directories.activity.recorder), never by a SCIM request
    itself, under this row's lock, so batches from any number of processes and nodes add up. Times in
    `recent_failures` and the keys of `hours` are integers (microseconds and hours since the epoch): the
    same numbers the batches carry, compared exactly. No row yet means no request yet.
    """

    directory = models.OneToOneField(Directory, on_delete=models.CASCADE, primary_key=True, related_name="scim_health")
    # The state last decided (and announced as dsync.health_changed when it changed).
    state = models.CharField(max_length=24, choices=HealthState.choices, default=HealthState.NEVER_CONNECTED)
    last_request_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # The last request whose secret matched (and was not refused as deactivated), and the last 401.
    last_authenticated_at = models.DateTimeField(null=True, blank=True)
    last_auth_failure_at = models.DateTimeField(null=True, blank=True)
    # The latest authenticated requests that failed (4xx/5xx), newest first, at most five.
    recent_failures = models.JSONField(default=list, blank=True)
    # {"<hour since the epoch>": [requests, errors, auth failures]}, the last 24 hours only.
    hours = models.JSONField(default=dict, blank=True)
    # {"<ten seconds since the epoch>": [requests, refused by the rate limit]}, the last minute only.
    last_minute = models.JSONField(default=dict, blank=True)
    secret_last_used_at = models.DateTimeField(null=True, blank=True)
    previous_secret_last_used_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["state", "last_request_at"], name="scim_health_state")]

    def __str__(self) -> str:
        return f"{self.directory_id}: {self.state}"


class ScimLogEntry(models.Model):
    """One SCIM request of a directory, as the request log keeps it (contract §4.1): every one that ended
    in a 4xx or 5xx, and successful ones while the directory's `log_scim_requests` is on.

    Bodies are text, capped, with password values masked (scim.protocol.masking); no header is kept
    except the user agent. Deleted with the directory, and after SCIM_LOG_RETENTION_DAYS.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the indexes of Meta.indexes that start with it serve its lookups.
    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="scim_log", db_index=False)
    at = models.DateTimeField()
    method = models.CharField(max_length=16)
    # Relative to the directory's SCIM base (e.g. "/Users/<id>"), and the query string, decoded.
    path = models.TextField()
    query = models.TextField(blank=True, default="")
    status = models.PositiveSmallIntegerField()
    scim_type = models.CharField(max_length=32, blank=True, default="")
    detail = models.TextField(blank=True, default="")
    latency_ms = models.PositiveIntegerField()
    request_id = models.CharField(max_length=128)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.TextField(blank=True, default="")
    request_body = models.TextField(blank=True, default="")
    request_truncated = models.BooleanField(default=False)
    response_body = models.TextField(blank=True, default="")
    response_truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["directory", "at", "id"], name="scim_log_directory_at"),
            # `failed=true` reads only the failures, newest first, however many successes are kept.
            models.Index(
                fields=["directory", "at", "id"], name="scim_log_directory_failed", condition=models.Q(status__gte=400)
            ),
            models.Index(fields=["directory", "status", "at"], name="scim_log_directory_status"),
            models.Index(fields=["at"], name="scim_log_at"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.path} {self.status}"


# --- the deprovision guard (contract §4.2, directories.guard) ---------------------------------------------


class HeldChangeKind(models.TextChoices):
    DEACTIVATE = "deactivate", "Deactivate"
    DELETE = "delete", "Delete"
    UPDATE = "update", "Update"


class HeldChange(models.Model):
    """A SCIM change of a user that the deprovision guard holds: answered to the identity provider as if
    applied, not applied to the user's row (the application's view) until a person approves it.

    The document columns hold the identity provider's view of the user once this change is made (a
    delete keeps the view before it). The user's last held change (`latest`) is that view now: SCIM
    reads show it (`ScimUser`), SCIM writes to the user start from it. `position` orders a directory's
    held changes: they are taken under the directory's row lock, and applied in that order."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="held_changes", db_index=False)
    user = models.ForeignKey(DirectoryUser, on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.BigIntegerField()
    change = models.CharField(max_length=16, choices=HeldChangeKind.choices)
    held_at = models.DateTimeField()
    scim_request_id = models.CharField(max_length=128, blank=True, default="")
    latest = models.BooleanField(default=True)
    user_name = models.CharField(max_length=512)
    user_name_key = models.CharField(max_length=512)
    external_id = models.CharField(max_length=512, null=True, blank=True)
    first_name = models.CharField(max_length=512, blank=True, default="")
    last_name = models.CharField(max_length=512, blank=True, default="")
    email = models.CharField(max_length=512, blank=True, default="")
    email_key = models.CharField(max_length=512, blank=True, default="")
    active = models.BooleanField(default=True)
    raw = models.JSONField(default=dict)
    filter_doc = models.JSONField(default=dict)

    # The document fields a held change carries, as DirectoryUser names them.
    DOCUMENT = (
        "user_name", "user_name_key", "external_id", "first_name", "last_name", "email", "email_key", "active",
        "raw", "filter_doc",
    )  # fmt: skip

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["directory", "position"], name="held_change_position"),
            models.UniqueConstraint(fields=["user"], condition=models.Q(latest=True), name="held_change_latest"),
        ]
        indexes = [models.Index(fields=["user", "position"], name="held_change_user")]

    def __str__(self) -> str:
        return f"{self.change} {self.user_name} (held {self.held_at})"


class Deprovision(models.Model):
    """A deprovision the guard let through, at `at`: what its sliding window counts. Kept at most the
    longest window (a periodic purge drops older rows); deprovisions of a directory whose guard is off,
    and approved ones, are not recorded."""

    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="+", db_index=False)
    at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["directory", "at"], name="deprovision_directory_at"),
            models.Index(fields=["at"], name="deprovision_at"),
        ]

    def __str__(self) -> str:
        return f"{self.directory_id} at {self.at}"


class ScimUser(models.Model):
    """The users as the SCIM surface shows them while a directory holds changes: a database view (migration
    0008) of each user's row, or of its last held change when it has one, without the users whose held
    change is a delete. SCIM lists and filters read it instead of DirectoryUser only then (scim.storage), so
    a filter evaluates on the identity provider's view. Read-only, same column names as DirectoryUser."""

    id = models.UUIDField(primary_key=True)
    directory = models.ForeignKey(
        Directory, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False
    )
    user_name = models.CharField(max_length=512)
    user_name_key = models.CharField(max_length=512)
    external_id = models.CharField(max_length=512, null=True)
    active = models.BooleanField()
    raw = models.JSONField()
    filter_doc = models.JSONField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    # As DirectoryUser.member_of (scim.resources renders either).
    member_of: list[tuple[uuid.UUID, str]] | None = None

    class Meta:
        managed = False
        db_table = "directories_scimuser"
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.user_name
