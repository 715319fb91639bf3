"""A directory: one connection from one identity provider (contract §3), with its SCIM credentials, its
webhook, its attribute and role maps and its deprovision guard's setting."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.utils import timezone

from core.crypto import EncryptedTextField
from directories.guard.rules import guard_defaults
from directories.oauthsecrets import secrets_live


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
    # How the directory's own webhook is signed (contract §5.2): "roster" or "standard".
    webhook_format = models.CharField(max_length=16, default="roster")
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
    # OAuth 2.0 client credentials for SCIM (contract §4.3). The client's id is the directory's id; its
    # secrets (up to 5 unexpired, each with an expiry) are kept as SHA-256 digests in this list, newest
    # first (directories.oauthsecrets: OAuth is off while none is unexpired). An access token is MACed with a
    # key derived from the digest of the secret that obtained it (scim/access_tokens.py), so revoking a secret ends
    # its tokens. `scim_static_secret_enabled` false turns the bearer secret above off (and a kept previous one).
    scim_oauth_secrets = models.JSONField(default=list, blank=True)
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
        """Whether the directory's OAuth client has an unexpired secret, so its token endpoint issues tokens."""
        return bool(secrets_live(self.scim_oauth_secrets, timezone.now()))

    @property
    def scim_oauth_secret_created_at(self) -> datetime | None:
        """When its newest client secret was made (None without one)."""
        stored = self.scim_oauth_secrets
        return datetime.fromisoformat(stored[0]["created_at"]) if stored else None

    def previous_scim_secret_valid(self, now: datetime) -> bool:
        """Whether the secret a rotation with grace kept still authenticates at `now`."""
        expires = self.previous_scim_secret_expires_at
        return bool(self.previous_scim_secret) and expires is not None and now < expires
