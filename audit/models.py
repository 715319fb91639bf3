"""The audit trail: one row per change a person or a program made through a surface of Roster.

The app sits just above `core` in the layers (pyproject.toml), so the service that makes a change can
record its entry in its own transaction, whichever app it lives in. The admin user is named through
Django's AUTH_USER_MODEL setting, so this app imports nothing of `adminauth`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """One action: who, what, when, on which target, from where. Never holds secret values."""

    id = models.BigAutoField(primary_key=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_email = models.CharField(max_length=320, blank=True, default="")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=32, blank=True, default="")
    target_id = models.CharField(max_length=64, blank=True, default="")
    directory_id = models.UUIDField(null=True, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table keeps the name it had when the trail lived in adminauth: moving the model moved no row.
        db_table = "adminauth_auditentry"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["action", "created_at"], name="audit_action"),
            models.Index(fields=["directory_id", "created_at"], name="audit_directory"),
            models.Index(fields=["actor", "created_at"], name="audit_actor"),
        ]
