"""Setup links (contract §3.1): a link the application gives a customer's IT admin, who opens it to connect
their identity provider to one directory, without an account.

Only the SHA-256 digest of a link's token is stored (core.crypto.secret_digest): the token itself is in
the link's URL, shown once to whoever created it. A link's status is not a column: it follows from
`revoked_at` and `expires_at` at the moment it is read, so a revocation or an expiry takes effect on
every node at once (nothing about a link is kept in a process's memory).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models

from directories.models import Directory


class SetupLinkStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    EXPIRED = "expired", "Expired"
    REVOKED = "revoked", "Revoked"


class SetupLink(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="setup_links", db_index=False)
    token_hash = models.CharField(max_length=64, unique=True)
    # Who made it, as the audit trail names them: an admin's email, an API key, the OS user of manage.py.
    created_by = models.CharField(max_length=400)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=400, blank=True, default="")
    # Where the page's "Done" link goes ("" for none): https, or http on loopback with DEBUG.
    return_url = models.CharField(max_length=2048, blank=True, default="")
    allow_mapping = models.BooleanField(default=False)
    # The roles the directory's role_map used when the link was made: the IT admin may map groups to any
    # of these or of the roles the map uses now, so removing a role's last group does not lose the role.
    roles = models.JSONField(default=list, blank=True)
    last_opened_at = models.DateTimeField(null=True, blank=True)
    opened_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["directory", "created_at", "id"], name="setup_link_directory")]

    def __str__(self) -> str:
        return f"setup link {self.id} of {self.directory_id}"

    def status_at(self, now: datetime) -> str:
        """active, expired or revoked at `now`; a link both revoked and past its expiry is revoked."""
        if self.revoked_at is not None:
            return SetupLinkStatus.REVOKED.value
        if now >= self.expires_at:
            return SetupLinkStatus.EXPIRED.value
        return SetupLinkStatus.ACTIVE.value

    @property
    def actor(self) -> str:
        """How the audit trail names what this link does: `setup-link:<id>`."""
        return f"setup-link:{self.id}"
