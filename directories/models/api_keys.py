"""The REST API's keys (contract §1), of which only a digest is kept."""

from __future__ import annotations

from django.db import models

from core.crypto import secret_digest


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
