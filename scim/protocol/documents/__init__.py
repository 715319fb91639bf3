"""SCIM documents in memory: validating POST/PUT bodies and applying PATCH operations (RFC 7644 §3.5.2).

No database access here: services load a row, call these functions on its `raw` document, and write
back the result. That keeps a PATCH atomic (everything is applied to a copy, the copy is validated,
and only then is anything written) and keeps the rules testable without HTTP.

The package is split by topic: `fields` (what both resource types share), `patch` (the PatchOp body
and the document patcher), `userdoc` and `groupdoc` (the user and the group document; `filterdoc` derives
the comparison document of either).
"""

from __future__ import annotations

from scim.protocol.documents.fields import coerce_active, require_object
from scim.protocol.documents.groupdoc import MemberPlan, group_finalize, group_patch, member_ids
from scim.protocol.documents.patch import patch_operations
from scim.protocol.documents.userdoc import UserColumns, user_finalize, user_patch

__all__ = [
    "MemberPlan",
    "UserColumns",
    "coerce_active",
    "group_finalize",
    "group_patch",
    "member_ids",
    "patch_operations",
    "require_object",
    "user_finalize",
    "user_patch",
]
