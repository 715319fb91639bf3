"""A directory's setup links (`roster.setup_links`) and the changes its deprovision guard holds
(`roster.held_changes`): what an application does for its customers' IT admins and its operators, one route
per method, like client.py's namespaces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from roster_client._generated.models import ApprovedResult, DiscardedResult, HeldChange, NewSetupLink, SetupLink
from roster_client._http import Namespace, segment
from roster_client.paging import Paged, paged

BASE = "/api/v1/directory-sync"


class SetupLinks(Namespace):
    def create(
        self,
        directory_id: str,
        *,
        expires_in: Optional[int] = None,
        return_url: Optional[str] = None,
        allow_mapping: Optional[bool] = None,
    ) -> NewSetupLink:
        """A link the customer's IT admin opens to connect their identity provider. Its `url` is in this answer
        only (Roster keeps a digest of the token). `expires_in` in seconds (None: Roster's default, 3 days)."""
        fields = {"expires_in": expires_in, "return_url": return_url, "allow_mapping": allow_mapping}
        body = {key: value for key, value in fields.items() if value is not None}
        answer = self._t.call("POST", f"{BASE}/{segment(directory_id)}/setup-links", body=body)
        return NewSetupLink.from_dict(answer.body["data"])

    def list(self, directory_id: str, *, page_limit: int = 100) -> Paged[SetupLink]:
        """The directory's links with their status (never their token)."""
        return paged(self._t, f"{BASE}/{segment(directory_id)}/setup-links", SetupLink, None, page_limit)

    def revoke(self, directory_id: str, link_id: str) -> None:
        """The link stops working at once, on every node."""
        self._t.call("DELETE", f"{BASE}/{segment(directory_id)}/setup-links/{segment(link_id)}")


class HeldChanges(Namespace):
    def list(self, directory_id: str, *, page_limit: int = 100) -> Paged[HeldChange]:
        """What the tripped guard holds, in the order it was held (and is applied on approval)."""
        return paged(self._t, f"{BASE}/{segment(directory_id)}/held-changes", HeldChange, None, page_limit)

    def approve(self, directory_id: str, ids: Optional[Sequence[str]] = None) -> ApprovedResult:
        """Apply the held changes named (None: all of them); each produces its event now, with `held_since`."""
        answer = self._t.call("POST", f"{BASE}/{segment(directory_id)}/held-changes/approve", body=_which(ids))
        return ApprovedResult.from_dict(answer.body["data"])

    def discard(self, directory_id: str, ids: Optional[Sequence[str]] = None) -> DiscardedResult:
        """Drop the held changes named (None: all of them): the application never sees them."""
        answer = self._t.call("POST", f"{BASE}/{segment(directory_id)}/held-changes/discard", body=_which(ids))
        return DiscardedResult.from_dict(answer.body["data"])


def _which(ids: Optional[Sequence[str]]) -> dict:
    if ids is None:
        return {}
    if isinstance(ids, (str, bytes)) or not ids:
        raise ValueError("ids must be a non-empty list of held change ids, or None for all of them")
    return {"ids": [str(held_id) for held_id in ids]}
