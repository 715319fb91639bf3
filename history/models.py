"""A directory's history (contract §5.3), folded from its changes feed (contract §5.1).

Each user and group version, and each stretch of time a user spent in a group, is one row valid over
a half-open range of the directory's event numbers: from `valid_from` (the event that made it) up to,
not including, `valid_to` (the event that ended it; OPEN while it lasts). The directory as it was right
after event S is every row with `valid_from <= S < valid_to`. docs/history.md describes the design,
docs/decisions.md why it was chosen.
"""

from __future__ import annotations

from django.db import models

# `valid_to` of a row still valid: larger than any event number, so "valid at S" is one range test.
OPEN = 2**62


class HistoryState(models.Model):
    """How far a directory's feed has been folded into its history rows."""

    directory = models.OneToOneField(
        "directories.Directory", on_delete=models.CASCADE, primary_key=True, related_name="history_state"
    )
    folded_sequence = models.BigIntegerField(default=0)
    folded_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.directory_id} folded to {self.folded_sequence}"


class HistoryPoint(models.Model):
    """One folded event: its number and time, which turn a moment into a point of history."""

    directory = models.ForeignKey("directories.Directory", on_delete=models.CASCADE, db_index=False)
    sequence = models.BigIntegerField()
    created_at = models.DateTimeField()
    event_type = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["directory", "sequence"], name="history_point_sequence"),
        ]
        indexes = [models.Index(fields=["directory", "created_at", "sequence"], name="history_point_time")]


class UserVersion(models.Model):
    directory = models.ForeignKey("directories.Directory", on_delete=models.CASCADE, db_index=False)
    user_id = models.UUIDField()
    valid_from = models.BigIntegerField()
    valid_to = models.BigIntegerField(default=OPEN)
    # The user's own created_at (as its events show it, to the millisecond) then the number of the event
    # that created it: the order of every list (oldest first, as the REST API lists users).
    created_at = models.DateTimeField()
    born = models.BigIntegerField()
    # The User as its event carried it, without what is computed with today's maps (custom_attributes, roles).
    data = models.JSONField()

    class Meta:
        indexes = [
            models.Index(fields=["directory", "valid_to", "valid_from"], name="history_user_valid"),
            models.Index(fields=["directory", "valid_from"], name="history_user_from"),
            models.Index(fields=["directory", "user_id", "valid_to"], name="history_user_id"),
        ]


class GroupVersion(models.Model):
    directory = models.ForeignKey("directories.Directory", on_delete=models.CASCADE, db_index=False)
    group_id = models.UUIDField()
    valid_from = models.BigIntegerField()
    valid_to = models.BigIntegerField(default=OPEN)
    created_at = models.DateTimeField()
    born = models.BigIntegerField()
    data = models.JSONField()

    class Meta:
        indexes = [
            models.Index(fields=["directory", "valid_to", "valid_from"], name="history_group_valid"),
            models.Index(fields=["directory", "valid_from"], name="history_group_from"),
            models.Index(fields=["directory", "group_id", "valid_to"], name="history_group_id"),
        ]


class MembershipSpan(models.Model):
    """A user's stay in a group: from the event that added it to the one that removed it (or deleted
    the user or the group)."""

    directory = models.ForeignKey("directories.Directory", on_delete=models.CASCADE, db_index=False)
    group_id = models.UUIDField()
    user_id = models.UUIDField()
    valid_from = models.BigIntegerField()
    valid_to = models.BigIntegerField(default=OPEN)

    class Meta:
        indexes = [
            models.Index(fields=["directory", "group_id", "valid_to", "valid_from"], name="history_member_group"),
            models.Index(fields=["directory", "user_id", "valid_to"], name="history_member_user"),
            models.Index(fields=["directory", "valid_from"], name="history_member_from"),
            models.Index(fields=["directory", "valid_to"], name="history_member_to"),
        ]
