"""A directory's changes feed: read it, follow it, resend from it.

Every event of a directory carries a `sequence`, 1, 2, 3… with no gap, and Roster's reads are gap-free. So
a follower that has applied event n asks for `after=n` and must get n+1 first: anything else means events it
can no longer read (Roster answers 410 once they are past retention), and it raises `ResyncRequired` rather
than go on past them. An application then resynchronises the directory from the user and group lists
(reading the directory's `events.last_sequence` first) and follows again from that number.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from typing import Callable, Optional

from roster_client._generated.models import Change, ResendResult
from roster_client._http import Namespace, Transport, segment
from roster_client.errors import GoneError, ResyncRequired

BASE = "/api/v1/directory-sync"
FEED_LIMIT_MAX = 1000  # what Roster serves at most per read


def _check_position(after: int, limit: int) -> None:
    if not 1 <= limit <= FEED_LIMIT_MAX:
        raise ValueError(f"limit must be from 1 to {FEED_LIMIT_MAX}")
    if after < 0:
        raise ValueError("after must be 0 or more")


class Changes(Namespace):
    def __init__(self, transport: Transport, *, sleep: Callable[[float], None]) -> None:
        super().__init__(transport)
        self._sleep = sleep

    def page(self, directory_id: str, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        """One read: the events with a sequence above `after`, in order, at most `limit` (1 to 1000)."""
        _check_position(after, limit)
        path = f"{BASE}/{segment(directory_id)}/changes"
        try:
            answer = self._t.call("GET", path, params={"after": after, "limit": limit})
        except GoneError as exc:
            raise ResyncRequired(
                exc.message, directory_id=str(directory_id), after=after, status=exc.status, request_id=exc.request_id
            ) from exc
        return [Change.from_dict(item) for item in answer.body.get("data") or []]

    def list(self, directory_id: str, *, after: int = 0, limit: int = 100) -> Iterator[Change]:
        """Every event after `after`, page by page (`limit` per read), until the feed's head; then stops.
        Raises ResyncRequired when the feed no longer holds what follows `after`, or shows a gap."""
        return self._read(directory_id, after=after, limit=limit, poll_interval=None)

    def follow(
        self, directory_id: str, *, after: int = 0, poll_interval: float = 2.0, limit: int = 100
    ) -> Iterator[Change]:
        """Every event after `after`, in order, then each new one as it comes: at the feed's head it reads
        again every `poll_interval` seconds, for as long as the caller iterates. Never skips an event: a gap
        or a 410 raises ResyncRequired (its `after` is the last sequence yielded)."""
        if poll_interval < 0:
            raise ValueError("poll_interval must be 0 or more")
        return self._read(directory_id, after=after, limit=limit, poll_interval=poll_interval)

    def _read(self, directory_id: str, *, after: int, limit: int, poll_interval: Optional[float]) -> Iterator[Change]:
        _check_position(after, limit)  # now, not at the first read

        def events() -> Iterator[Change]:
            position = after
            while True:
                changes = self.page(directory_id, after=position, limit=limit)
                for change in changes:
                    if change.sequence != position + 1:
                        raise ResyncRequired(
                            f"the feed went from sequence {position} to {change.sequence}: "
                            "resynchronise from the user and group lists",
                            directory_id=str(directory_id),
                            after=position,
                        )
                    position = change.sequence
                    yield change
                if len(changes) < limit:
                    if poll_interval is None:
                        return
                    self._sleep(poll_interval)

        return events()

    def resend(
        self,
        directory_id: str,
        *,
        from_sequence: Optional[int] = None,
        to_sequence: Optional[int] = None,
        event_ids: Optional[Sequence[str]] = None,
        endpoint_id: Optional[str] = None,
    ) -> ResendResult:
        """One more attempt of chosen events to the directory's current webhook: the range `from_sequence`
        to `to_sequence` (both included, at most 1000), or `event_ids`. Its `queued` counts them."""
        if event_ids is not None:
            if from_sequence is not None or to_sequence is not None:
                raise ValueError("give either from_sequence and to_sequence, or event_ids")
            body: dict = {"event_ids": [str(event_id) for event_id in event_ids]}
        elif from_sequence is not None and to_sequence is not None:
            body = {"from": from_sequence, "to": to_sequence}
        else:
            raise ValueError("give from_sequence and to_sequence, or event_ids")
        if endpoint_id is not None:
            body["endpoint_id"] = str(endpoint_id)  # that webhook endpoint only, instead of the directory's own
        answer = self._t.call("POST", f"{BASE}/{segment(directory_id)}/changes/resend", body=body)
        return ResendResult.from_dict(answer.body["data"])
