"""Portal state kept in the database: failed sign-in attempts, for throttling.

Kept in the database rather than the cache because the default cache is per process: with three
gunicorn workers an attacker would get three times the budget, and a restart would reset it.
"""

from __future__ import annotations

from django.db import models


class SignInFailure(models.Model):
    """One failed sign-in. `email_key` is the lowercased email that was tried (it may not exist)."""

    email_key = models.CharField(max_length=320)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["email_key", "created_at"], name="signin_failure_email"),
            models.Index(fields=["client_ip", "created_at"], name="signin_failure_ip"),
        ]

    def __str__(self) -> str:
        return f"{self.email_key} from {self.client_ip} at {self.created_at:%Y-%m-%d %H:%M:%S}"
