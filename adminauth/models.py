"""Admin users (the portal's and the admin API's principals), admin tokens, and the login throttle's failures."""

from __future__ import annotations

import uuid

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.db import models


class AdminUserManager(BaseUserManager["AdminUser"]):
    def get_by_natural_key(self, username: str | None) -> AdminUser:
        # Emails are compared case-insensitively: "Ops@Example.com" signs in as "ops@example.com".
        return self.get(email_key=(username or "").strip().lower())

    def create_user(self, email: str, password: str | None = None) -> AdminUser:
        email = email.strip()
        user = self.model(email=email, email_key=email.lower())
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(using=self._db)
        return user


class AdminUser(AbstractBaseUser):
    """An administrator. Created by the admin API's _login (no password) or by `manage.py createadmin`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.CharField(max_length=320)
    email_key = models.CharField(max_length=320, unique=True)
    timezone = models.CharField(max_length=64, default="UTC")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AdminUserManager()

    USERNAME_FIELD = "email_key"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.email


class AdminToken(models.Model):
    """A bearer credential of the admin API; the secret itself is shown once, only its bcrypt hash kept."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(AdminUser, on_delete=models.CASCADE, related_name="tokens")
    token_bcrypt = models.CharField(max_length=128)
    disabled = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class LoginFailure(models.Model):
    """One failed attempt at the root token, an admin token, the portal's sign-in or a setup link's token
    (adminauth.throttle).

    Counting rows in the database (not in process memory) makes the throttle hold across all
    web workers and hosts sharing the database. A throttled client records no further rows,
    so one address holds at most ADMIN_LOGIN_MAX_FAILURES rows per window; older rows are pruned.
    """

    id = models.BigAutoField(primary_key=True)
    client_ip = models.CharField(max_length=64)
    # The account tried, counted per account: the email at the portal's sign-in (empty for the admin API's
    # tokens), `directory:<id>` at a directory's OAuth token endpoint.
    email_key = models.CharField(max_length=320, blank=True, default="")
    # What was tried (adminauth.throttle): "admin" credentials, a "setup-link" token, or a "scim-oauth"
    # client secret. Each is counted apart, so a customer's IT admin opening expired setup links cannot
    # lock admins out, nor the reverse.
    scope = models.CharField(max_length=16, default="admin")
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["client_ip", "created_at"], name="login_failure_ip"),
            models.Index(fields=["email_key", "created_at"], name="login_failure_email"),
            models.Index(fields=["created_at"], name="login_failure_created"),
        ]
