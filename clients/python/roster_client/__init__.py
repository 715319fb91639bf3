"""Roster's Python client: its REST API, its changes feed and its webhooks.

from roster_client import Roster
roster = Roster(base_url="https://roster.example.com", api_key="...")  # or ROSTER_URL / ROSTER_API_KEY
for user in roster.users.list(tenant="acme", product="crm"):
    print(user.email)
"""

from roster_client._generated.models import (
    ApprovedResult,
    Change,
    ChangeDelivery,
    Delivery,
    Diff,
    Directory,
    DiscardedResult,
    EventsSummary,
    Group,
    GroupDetail,
    Guard,
    Health,
    HeldChange,
    HistoryGroup,
    HistoryUser,
    Member,
    NewScimOAuthSecret,
    NewSetupLink,
    ResendResult,
    ScimInfo,
    ScimOAuthInfo,
    ScimOAuthSecret,
    ScimRequest,
    SetupLink,
    User,
    WebhookInfo,
)
from roster_client._results import Result
from roster_client._version import __version__
from roster_client.client import UNSET, Roster
from roster_client.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GoneError,
    NotFoundError,
    ResyncRequired,
    RosterError,
    WebhookVerificationError,
)
from roster_client.history import History
from roster_client.paging import Paged
from roster_client.webhooks import WebhookEvent, verify_webhook

__all__ = [
    "UNSET",
    "ApprovedResult",
    "AuthenticationError",
    "BadRequestError",
    "Change",
    "ChangeDelivery",
    "ConflictError",
    "Delivery",
    "Directory",
    "DiscardedResult",
    "EventsSummary",
    "GoneError",
    "Group",
    "GroupDetail",
    "Guard",
    "HeldChange",
    "History",
    "HistoryGroup",
    "HistoryUser",
    "Diff",
    "Health",
    "Member",
    "NewScimOAuthSecret",
    "NewSetupLink",
    "NotFoundError",
    "Paged",
    "ResendResult",
    "Result",
    "ResyncRequired",
    "Roster",
    "RosterError",
    "ScimInfo",
    "ScimOAuthInfo",
    "ScimOAuthSecret",
    "ScimRequest",
    "SetupLink",
    "User",
    "WebhookEvent",
    "WebhookInfo",
    "WebhookVerificationError",
    "__version__",
    "verify_webhook",
]
