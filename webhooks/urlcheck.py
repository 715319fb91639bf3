"""Save-time validation of webhook URLs (SPEC §5: http/https only, no private addresses)."""

from __future__ import annotations

from urllib.parse import urlsplit

from directories.errors import ValidationFailed


def validate_webhook_url(url: str, *, field: str = "webhook_url") -> None:
    """Raise ValidationFailed with a message a person can act on when `url` cannot be a webhook endpoint."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValidationFailed(f"{field} is not a valid URL.", field=field) from None
    if parts.scheme not in ("http", "https"):
        raise ValidationFailed(f"{field} must be an http or https URL.", field=field)
    if not parts.hostname:
        raise ValidationFailed(f"{field} must include a host name.", field=field)
