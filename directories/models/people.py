"""The users, groups and memberships that identity providers push, and the users' tally.

Uniqueness lives in the database: `user_name_key` and `display_name_key` hold the comparison form
of userName/displayName (core.comparison: NFC + casefold, RFC 7643 caseExact=false, RFC 7644 §7.8)
and carry the per-directory unique constraints, so concurrent creates cannot both win. The original value is kept
exactly as sent (`user_name`, `display_name`, and `raw`).
"""

from __future__ import annotations

import uuid

from django.db import models

from directories.models.directory import Directory


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
    """How many users were ever created in and deleted from a directory, and how many are active,
    summed over a few rows.

    On PostgreSQL, triggers (migrations 0003 and 0013) keep these rows as users are inserted, deleted
    and turned active or inactive, by any path: SCIM, bulk inserts and updates, the cascade of a
    directory delete. A list page then reads `SUM(created - deleted)` over at most `SHARDS` rows instead
    of counting the directory's users, and the pair of sums changes whenever the set of users does, which
    is what tells `directories.pages` that its position marks are stale. `SUM(active)` is the number of
    active users, which the deprovision guard weighs each deprovision against under the directory's lock
    (scim.storage.guard): a read of at most `SHARDS` rows, whatever the directory's size. Each database
    session adds to its own shard (backend pid modulo `SHARDS`), so concurrent writes in one directory do
    not queue on one row. Every trigger runs at the end of its statement, after the events' counter of
    docs/events.md, as they all have since the tally exists. A counter kept by the database, not business
    logic: nothing else is decided here. Other databases (SQLite) have no triggers and no rows here; their
    pages and the guard count.

    The foreign key is declared in SQL (deferrable, ON DELETE CASCADE) so that deleting a directory
    drops its tally after the cascade of its users has updated it; Django leaves the rows alone.
    """

    SHARDS = 16  # written as a literal in the triggers of migrations 0003 and 0013

    pk = models.CompositePrimaryKey("directory", "shard")
    directory = models.ForeignKey(
        Directory, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    shard = models.SmallIntegerField()
    created = models.BigIntegerField(default=0)
    deleted = models.BigIntegerField(default=0)
    # This shard's share of the active users: +1 per active user inserted or turned active, -1 per active
    # user deleted or turned inactive (so one shard may be negative; the sum never is).
    active = models.BigIntegerField(default=0, db_default=0)

    def __str__(self) -> str:
        return f"{self.directory_id}/{self.shard}: +{self.created} -{self.deleted}"
