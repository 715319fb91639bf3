"""A webhook receiver that applies each directory's events once and in order, catching up from the feed.

It verifies each delivery (`verify_webhook`), drops repeats (by event id), applies a directory's events in
the order of their `sequence`, and when a number is missing (n + 2 arrives after n: the endpoint was down,
or an attempt failed) reads the missing events from the changes feed before going on.

    roster = Roster(base_url="https://roster.example.com", api_key=API_KEY)
    receiver = Receiver(roster=roster, secret=WEBHOOK_SECRET, apply=my_apply)  # my_apply(event): upsert…

    def webhook_view(request):
        try:
            receiver.handle(request.body, request.headers)
        except WebhookVerificationError as exc:   # answer 400
            return 400, str(exc)
        except ResyncRequired as exc:             # the feed no longer holds what was missed
            schedule_full_resync(exc.directory_id)
        return 204

After a full resynchronisation (list the directory's users and groups after reading its
`events.last_sequence`), call `receiver.start(directory_id, that number)`. `receiver.catch_up(directory_id)`
pulls from the feed without waiting for a push (at start-up, after an outage, or on a timer).

State (the last applied number per directory, the ids already seen) lives in a `State`; `MemoryState` keeps
it in this process, with a bounded set of ids. An application that runs several processes, or must survive
restarts, passes its own (a database table) with the same four methods. One `Receiver` serialises its work
with a lock, catch-up reads included.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable, Optional, Protocol, Union

from roster_client._generated.models import Change
from roster_client.changes import FEED_LIMIT_MAX
from roster_client.client import Roster
from roster_client.errors import RosterError
from roster_client.webhooks import DEFAULT_TOLERANCE, SIGNATURE_HEADER, WebhookEvent, verify_webhook

# What `handle` did with a delivery.
APPLIED = "applied"  # the next event in order: applied
CAUGHT_UP = "caught_up"  # a gap before it: the missing events were read from the feed and applied, then it
DUPLICATE = "duplicate"  # an event id already seen: nothing done
STALE = "stale"  # a number at or below the last applied (an older event arriving late): nothing done

SEEN_MAX = 100_000  # event ids MemoryState remembers


class State(Protocol):
    def last_sequence(self, directory_id: str) -> Optional[int]: ...
    def set_last_sequence(self, directory_id: str, sequence: int) -> None: ...
    def seen(self, event_id: str) -> bool: ...
    def remember(self, event_id: str) -> None: ...


class MemoryState:
    """State in this process: the last number per directory, and the most recent `seen_max` event ids
    (older ids are forgotten; the sequence check still drops an old event that comes back)."""

    def __init__(self, seen_max: int = SEEN_MAX) -> None:
        self._last: dict[str, int] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._seen_max = seen_max

    def last_sequence(self, directory_id: str) -> Optional[int]:
        return self._last.get(directory_id)

    def set_last_sequence(self, directory_id: str, sequence: int) -> None:
        self._last[directory_id] = sequence

    def seen(self, event_id: str) -> bool:
        return event_id in self._seen

    def remember(self, event_id: str) -> None:
        self._seen[event_id] = None
        self._seen.move_to_end(event_id)
        while len(self._seen) > self._seen_max:
            self._seen.popitem(last=False)


def _as_event(change: Change) -> WebhookEvent:
    """A feed item as its webhook was delivered (without the feed's `delivery`)."""
    return WebhookEvent.from_dict({key: value for key, value in change.to_dict().items() if key != "delivery"})


class Receiver:
    """Verify, de-duplicate and apply Roster events in sequence order, catching up from the feed.

    `apply(event)` receives each event (a WebhookEvent) once, in sequence order per directory. When it
    raises, the event counts as not applied: the next delivery finds the gap and reads it from the feed.
    """

    def __init__(
        self,
        *,
        roster: Roster,
        secret: str,
        apply: Callable[[WebhookEvent], Any],
        state: Optional[State] = None,
        tolerance: float = DEFAULT_TOLERANCE,
        page_limit: int = FEED_LIMIT_MAX,
    ) -> None:
        if not 1 <= page_limit <= FEED_LIMIT_MAX:
            raise ValueError(f"page_limit must be from 1 to {FEED_LIMIT_MAX}")
        self.roster, self.secret, self.apply = roster, secret, apply
        self.state: State = state if state is not None else MemoryState()
        self.tolerance, self.page_limit = tolerance, page_limit
        self._lock = threading.Lock()

    def handle(self, body: Union[bytes, str], headers: Mapping[str, str]) -> str:
        """One delivery: its raw body and headers. Returns APPLIED, CAUGHT_UP, DUPLICATE or STALE; raises
        WebhookVerificationError (answer 400), ResyncRequired, or RosterError (the feed could not be read)."""
        event = verify_webhook(
            body=body, signature=_header(headers, SIGNATURE_HEADER), secret=self.secret, tolerance=self.tolerance
        )
        with self._lock:
            return self._receive(event)

    def _receive(self, event: WebhookEvent) -> str:
        if self.state.seen(event.id):
            return DUPLICATE
        if event.sequence is None or event.directory_id is None:  # a directory-level (dsync.*) event
            self._apply(event)
            return APPLIED
        last = self.state.last_sequence(event.directory_id)
        if last is None:
            # No state for this directory yet: this event is where following it starts (see `start`).
            self._apply(event)
            return APPLIED
        if event.sequence <= last:
            self.state.remember(event.id)
            return STALE
        if event.sequence == last + 1:
            self._apply(event)
            return APPLIED
        self._catch_up(event.directory_id, last)
        if not self.state.seen(event.id):
            # The feed lists every committed event, and this one committed before it was sent; should the
            # read have ended before it anyway, it is applied in order or not at all.
            if self.state.last_sequence(event.directory_id) != event.sequence - 1:
                raise RosterError(f"the changes feed stopped before sequence {event.sequence}")
            self._apply(event)
        return CAUGHT_UP

    def _apply(self, event: WebhookEvent) -> None:
        self.apply(event)
        self.state.remember(event.id)
        if event.sequence is not None and event.directory_id is not None:
            self.state.set_last_sequence(event.directory_id, event.sequence)

    def start(self, directory_id: str, last_sequence: int) -> None:
        """Follow `directory_id` from `last_sequence`: the directory's `events.last_sequence`, read before
        listing its users and groups for a full resynchronisation."""
        with self._lock:
            self.state.set_last_sequence(str(directory_id), int(last_sequence))

    def catch_up(self, directory_id: str) -> int:
        """Apply every event after the last applied one, read from the feed; returns how many. A directory
        without state is read from its first event (ResyncRequired once the feed no longer holds it)."""
        directory_id = str(directory_id)
        with self._lock:
            return self._catch_up(directory_id, self.state.last_sequence(directory_id) or 0)

    def _catch_up(self, directory_id: str, after: int) -> int:
        applied = 0
        for change in self.roster.changes.list(directory_id, after=after, limit=self.page_limit):
            if self.state.seen(change.id):
                self.state.set_last_sequence(directory_id, change.sequence)
                continue
            self._apply(_as_event(change))
            applied += 1
        return applied


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    return value
