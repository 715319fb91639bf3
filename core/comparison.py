"""The form in which case-insensitive SCIM strings are compared and made unique.

userName and displayName are compared after NFC normalization and case folding (RFC 7643
caseExact=false, RFC 7644 §7.8). The models store this form in their uniqueness columns, the SCIM
documents and filters compare with it: one function, so a value and its stored key always agree.
"""

from __future__ import annotations

import unicodedata


def comparison_key(value: str) -> str:
    """The form in which case-insensitive SCIM strings are compared and made unique."""
    return unicodedata.normalize("NFC", value).casefold()
