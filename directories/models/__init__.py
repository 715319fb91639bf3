"""The directories app's models, one module per topic: a directory (`directory`), the REST API's keys
(`api_keys`), the users, groups and memberships identity providers push (`people`), SCIM activity
(`activity`) and the deprovision guard (`guard`).

Every model is importable from here (`from directories.models import Directory`), as Django and the
migrations expect of an app's models module.
"""

from __future__ import annotations

from directories.models.activity import HealthState, ScimHealth, ScimLogEntry
from directories.models.api_keys import ApiKey, api_key_hash
from directories.models.directory import Directory, DirectoryType
from directories.models.guard import Deprovision, HeldChange, HeldChangeKind, ScimUser
from directories.models.people import DirectoryGroup, DirectoryUser, GroupMembership, UserTally

__all__ = [
    "ApiKey",
    "Deprovision",
    "Directory",
    "DirectoryGroup",
    "DirectoryType",
    "DirectoryUser",
    "GroupMembership",
    "HealthState",
    "HeldChange",
    "HeldChangeKind",
    "ScimHealth",
    "ScimLogEntry",
    "ScimUser",
    "UserTally",
    "api_key_hash",
]
