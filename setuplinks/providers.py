"""The identity providers a directory is set up from, as the setup page and the portal present them: the
provider's own names for the fields to fill in, and the template with its numbered steps
(templates/providers/, the one home of those steps for both pages).

The SCIM base URL depends on the provider chosen, not only on the directory's type: Microsoft Entra ID
needs `?aadOptscim062020` at the end of its Tenant URL (that flag makes it send PATCH requests the way
RFC 7644 describes), whatever type the application gave the directory.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.surfaces import ENTRA_FLAG, scim_base_url
from directories.models import Directory, DirectoryType


@dataclass(frozen=True)
class Provider:
    key: str  # in the page's ?provider= parameter
    label: str
    directory_type: str
    base_url_field: str  # what the provider's form calls the base URL
    auth_field: str  # where the provider asks how to authenticate
    auth_choice: str  # what to choose there
    secret_field: str  # what the provider's form calls the secret

    @property
    def template(self) -> str:
        return f"providers/{self.key}.html"


PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "okta",
        "Okta",
        DirectoryType.OKTA,
        "SCIM connector base URL",
        "Authentication Mode",
        "HTTP Header",
        "Authorization (Bearer)",
    ),
    Provider(
        "entra",
        "Microsoft Entra ID",
        DirectoryType.AZURE,
        "Tenant URL",
        "Authentication Method",
        "Bearer Authentication",
        "Secret Token",
    ),
    Provider(
        "onelogin",
        "OneLogin",
        DirectoryType.ONELOGIN,
        "SCIM Base URL",
        "API Connection",
        "Bearer token",
        "SCIM Bearer Token",
    ),
    Provider(
        "jumpcloud",
        "JumpCloud",
        DirectoryType.JUMPCLOUD,
        "Base URL",
        "Token type",
        "Bearer Token",
        "Token Key",
    ),
    Provider(
        "generic",
        "Other SCIM 2.0 client",
        DirectoryType.GENERIC,
        "SCIM base URL",
        "Authentication",
        "HTTP header: Authorization: Bearer <secret>",
        "Bearer token",
    ),
)
_BY_KEY = {p.key: p for p in PROVIDERS}
_BY_TYPE = {p.directory_type: p for p in PROVIDERS}


def provider_for(*, key: str | None, directory_type: str) -> Provider:
    """The provider asked for by key; else the one of the directory's type."""
    if key in _BY_KEY:
        return _BY_KEY[key]  # type: ignore[index]
    return _BY_TYPE.get(directory_type, _BY_KEY["generic"])


def provider_base_url(directory: Directory, provider: Provider) -> str:
    """The SCIM base URL exactly as this provider wants it pasted."""
    url = scim_base_url(directory.id)
    return f"{url}?{ENTRA_FLAG}" if provider.key == "entra" else url
