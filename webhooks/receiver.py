"""A reference receiver of Roster webhooks, to copy into your application beside verify.py (standard
library only; no Django).

It checks each delivery's signature, drops repeats (by event id), applies a directory's events in the
order of their `sequence`, and when a number is missing (n + 2 arrives after n: the endpoint was down,
or an attempt failed) reads the missing events from the changes feed,
`GET <api_base>/api/v1/directory-sync/<directory id>/changes?after=<last applied>`, before going on.

    receiver = Receiver(secret=WEBHOOK_SECRET, api_base="https://roster.example.com", api_key=API_KEY,
                        apply=my_apply)          # my_apply(event): upsert event["data"], etc.

    def webhook_view(request):
        try:
            receiver.handle(request.body, request.headers)
        except SignatureError as exc:            # from verify.py: reject, answer 400
            return 400, str(exc)
        except ResyncRequired as exc:            # the feed no longer holds what was missed
            schedule_full_resync(exc.directory_id)
        return 204

`ResyncRequired` means the events after the last one applied are past the feed's retention: list the
directory's users and groups again (after reading the directory's `events.last_sequence`), then call
`receiver.start(directory_id, that number)`. `receiver.catch_up(directory_id)` pulls from the feed
without waiting for a push (at start-up, after an outage, or on a timer for an application that only
pulls).

State (the last applied number per directory, the ids already seen) lives in a `State`; `MemoryState`
keeps it in this process, with a bounded set of ids. An application that runs several processes, or
must survive restarts, passes its own (a database table) implementing the same four methods. One
`Receiver` serializes its work with a lock, catch-up reads included.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

try:  # inside Roster
    from webhooks.verify import DEFAULT_TOLERANCE, SignatureError, verify_signature
except ImportError:  # copied into an application, beside verify.py
    from verify import DEFAULT_TOLERANCE, SignatureError, verify_signature  # type: ignore[no-redef]

__all__ = [
    "APPLIED",
    "CAUGHT_UP",
    "DUPLICATE",
    "STALE",
    "FeedError",
    "MemoryState",
    "Receiver",
    "ReceiverError",
    "ResyncRequired",
    "SignatureError",
    "State",
]

# What `handle` did with a delivery.
APPLIED = "applied"  # the next event in order: applied
CAUGHT_UP = "caught_up"  # a gap before it: the missing events were read from the feed and applied, then it
DUPLICATE = "duplicate"  # an event id already seen: nothing done
STALE = "stale"  # a number at or below the last applied (an older event arriving late): nothing done

PAGE_LIMIT = 1000  # the most events the feed returns per read
SEEN_MAX = 100_000  # event ids MemoryState remembers


class ReceiverError(Exception):
    """Base class of what the receiver raises besides SignatureError."""


class ResyncRequired(ReceiverError):
    """The feed answered 410: the events after `after` are no longer kept. Resynchronise the directory
    from the user and group lists, then `Receiver.start` it at the `events.last_sequence` read before."""

    def __init__(self, directory_id: str, after: int, message: str) -> None:
        super().__init__(message)
        self.directory_id, self.after = directory_id, after


class FeedError(ReceiverError):
    """The feed could not be read (any answer other than 200 and 410, or a body that is not the envelope)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"changes feed answered {status}: {message}")
        self.status = status


class State(Protocol):
    def last_sequence(self, directory_id: str) -> int | None: ...
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

    def last_sequence(self, directory_id: str) -> int | None:
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


# fetch(url, headers) → (HTTP status, body bytes)
Fetch = Callable[[str, dict[str, str]], tuple[int, bytes]]


def urllib_fetch(url: str, headers: dict[str, str], timeout: float = 30.0) -> tuple[int, bytes]:
    """GET with the standard library; an HTTP error status is returned, not raised."""
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - the scheme is checked by Receiver
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class Receiver:
    """Verify, de-duplicate and apply Roster events in sequence order, catching up from the feed.

    `apply(event)` receives each event as delivered (the webhook payload: id, event, created_at,
    sequence, directory_id, data, …), once, in sequence order per directory. When it raises, the event
    counts as not applied: the next delivery finds the gap and reads it again from the feed.
    """

    def __init__(
        self,
        *,
        secret: str,
        api_base: str,
        api_key: str,
        apply: Callable[[dict[str, Any]], None],
        state: State | None = None,
        fetch: Fetch | None = None,
        tolerance: int = DEFAULT_TOLERANCE,
        page_limit: int = PAGE_LIMIT,
    ) -> None:
        if urllib.parse.urlsplit(api_base).scheme not in ("http", "https"):
            raise ValueError("api_base must be an http or https address, such as https://roster.example.com")
        if not 1 <= page_limit <= PAGE_LIMIT:
            raise ValueError(f"page_limit must be between 1 and {PAGE_LIMIT}")
        self.secret, self.api_key, self.apply = secret, api_key, apply
        self.api_base = api_base.rstrip("/")
        self.state: State = state if state is not None else MemoryState()
        self.fetch: Fetch = fetch or urllib_fetch
        self.tolerance, self.page_limit = tolerance, page_limit
        self._lock = threading.Lock()

    # --- deliveries ---------------------------------------------------------------------------------

    def handle(self, body: bytes, headers: Mapping[str, str]) -> str:
        """One webhook delivery: raw body bytes and its headers. Returns APPLIED, CAUGHT_UP, DUPLICATE or
        STALE; raises SignatureError (answer 400), ResyncRequired, FeedError."""
        signature = _header(headers, "Roster-Signature")
        verify_signature(body, signature, self.secret, tolerance=self.tolerance)
        event = json.loads(body)
        with self._lock:
            return self._receive(event)

    def _receive(self, event: dict[str, Any]) -> str:
        event_id = str(event["id"])
        if self.state.seen(event_id):
            return DUPLICATE
        sequence = event.get("sequence")
        if sequence is None:  # a directory-level (dsync.*) event: no order to keep
            self._apply(event)
            return APPLIED
        directory_id = str(event["directory_id"])
        last = self.state.last_sequence(directory_id)
        if last is None:
            # No state for this directory yet: this event is where following it starts (see `start`).
            self._apply(event)
            return APPLIED
        if sequence <= last:
            self.state.remember(event_id)
            return STALE
        if sequence == last + 1:
            self._apply(event)
            return APPLIED
        self._catch_up(directory_id, last)
        if not self.state.seen(event_id):
            # The feed lists every committed event, and this one committed before it was sent; should
            # the read have ended before it anyway, it still goes in order or not at all.
            if self.state.last_sequence(directory_id) != sequence - 1:
                raise FeedError(200, f"the feed stopped before sequence {sequence}")
            self._apply(event)
        return CAUGHT_UP

    def _apply(self, event: dict[str, Any]) -> None:
        self.apply(event)
        self.state.remember(str(event["id"]))
        if event.get("sequence") is not None:
            self.state.set_last_sequence(str(event["directory_id"]), int(event["sequence"]))

    # --- the feed -----------------------------------------------------------------------------------

    def start(self, directory_id: str, last_sequence: int) -> None:
        """Follow `directory_id` from `last_sequence`: the directory's `events.last_sequence`, read
        before listing its users and groups for a full resynchronisation."""
        with self._lock:
            self.state.set_last_sequence(str(directory_id), int(last_sequence))

    def catch_up(self, directory_id: str) -> int:
        """Apply every event after the last applied one, read from the feed; returns how many. A
        directory without state is read from its first event (ResyncRequired once the feed no longer
        holds it: `start` it after a full resynchronisation instead)."""
        directory_id = str(directory_id)
        with self._lock:
            return self._catch_up(directory_id, self.state.last_sequence(directory_id) or 0)

    def _catch_up(self, directory_id: str, after: int) -> int:
        applied = 0
        for event in self.changes(directory_id, after):
            if self.state.seen(str(event["id"])):
                self.state.set_last_sequence(directory_id, int(event["sequence"]))
                continue
            self._apply(event)
            applied += 1
        return applied

    def changes(self, directory_id: str, after: int) -> Iterator[dict[str, Any]]:
        """The directory's events after `after`, in order, page by page until the feed's head; each
        without the feed's `delivery` field, so it looks as delivered."""
        while True:
            query = urllib.parse.urlencode({"after": after, "limit": self.page_limit})
            url = f"{self.api_base}/api/v1/directory-sync/{urllib.parse.quote(directory_id)}/changes?{query}"
            status, body = self.fetch(url, {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"})
            message = _message(body)
            if status == 410:
                raise ResyncRequired(directory_id, after, message)
            if status != 200:
                raise FeedError(status, message)
            page = _page(body)
            for item in page:
                event = {key: value for key, value in item.items() if key != "delivery"}
                if int(event["sequence"]) != after + 1:
                    raise FeedError(status, f"expected sequence {after + 1}, got {event['sequence']}")
                after = int(event["sequence"])
                yield event
            if len(page) < self.page_limit:
                return


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    return value


def _page(body: bytes) -> list[dict[str, Any]]:
    try:
        data = json.loads(body)["data"]
    except (ValueError, KeyError, TypeError):
        raise FeedError(200, "the answer is not a {data, error} envelope") from None
    if not isinstance(data, list):
        raise FeedError(200, "the answer's data is not a list of events")
    return data


def _message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")
