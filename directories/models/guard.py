"""The deprovision guard (contract §4.2, directories.guard): the changes it holds, the deprovisions its window
counts, and the users as the SCIM surface shows them while changes are held."""

from __future__ import annotations

import uuid

from django.db import models

from directories.models.directory import Directory
from directories.models.people import DirectoryUser


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
