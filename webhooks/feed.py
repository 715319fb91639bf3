"""Reads of a directory's changes feed (contract §5.1): its events by sequence number, and the summary
every Directory shows (`events: {last_sequence, oldest_sequence}`).

Why a read never shows n+1 without n
------------------------------------
The write side gives a directory's numbers under a lock on its `EventSequence` row, taken by the last
statement of the change's transaction and held until that transaction commits. The next number is
therefore taken only once the previous holder is committed (or rolled back, giving its number back), so
on PostgreSQL numbers become visible in order: a single SELECT under READ COMMITTED sees one snapshot,
and that snapshot holds a prefix 1..k of the directory's numbers.

The reader does not rely on that alone. `feed_read` keeps only the contiguous run that starts at
`after + 1` and stops at the first missing number, whatever the database returned: a hole is treated
as "not visible yet", and the client reads it on its next poll. The one hole that never fills is one
the purge made, and the purge only ever deletes a prefix of a directory's numbers
(webhooks.services.sweeping), so such a hole is always below `oldest_sequence`: `after` below
`oldest_sequence - 1` is answered as expired (410) rather than as an empty page.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from core.errors import RosterError
from directories.models import Directory
from webhooks.models import EventSequence, WebhookEvent

FEED_LIMIT_DEFAULT = 100
FEED_LIMIT_MAX = 1000

EXPIRED_MESSAGE = (
    "Events after sequence {after} are no longer kept (the oldest kept is {oldest}). Resynchronise from the "
    "user and group lists, then follow this feed from the events.last_sequence read before listing."
)


class FeedExpired(RosterError):
    """`after` points below what retention kept: the client must resynchronise (410)."""

    status = 410


@dataclass(frozen=True, slots=True)
class FeedHead:
    """A directory's `events` summary: the last number given (0 before the first event) and the
    smallest one still kept (None when none is kept)."""

    last_sequence: int
    oldest_sequence: int | None


@dataclass(frozen=True, slots=True)
class FeedPage:
    events: list[WebhookEvent]
    head: FeedHead


_EMPTY = FeedHead(last_sequence=0, oldest_sequence=None)


def feed_heads(*, directory_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, FeedHead]:
    """The summary of each of these directories, in one query whatever their number (the directory
    lists render a page of them). Directories that do not exist are left out."""
    ids = list(directory_ids)
    if not ids:
        return {}
    last = EventSequence.objects.filter(directory_id=OuterRef("pk")).values("last")[:1]
    # The (directory_id, sequence) unique index answers this directly: its first entry.
    oldest = (
        WebhookEvent.objects.filter(directory_id=OuterRef("pk"), sequence__isnull=False)
        .order_by("sequence")
        .values("sequence")[:1]
    )
    rows = (
        Directory.objects.filter(pk__in=ids)
        .annotate(last_sequence=Subquery(last), oldest_sequence=Subquery(oldest))
        .values_list("pk", "last_sequence", "oldest_sequence")
        .order_by()
    )
    return {pk: FeedHead(last_sequence=last or 0, oldest_sequence=first) for pk, last, first in rows}


def feed_head_pairs(*, directory_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[int, int | None]]:
    """`feed_heads` as plain pairs, for the directories app (directories.outbox), which sits below this one."""
    return {
        pk: (head.last_sequence, head.oldest_sequence) for pk, head in feed_heads(directory_ids=directory_ids).items()
    }


def feed_head(*, directory: Directory) -> FeedHead:
    return feed_heads(directory_ids=[directory.id]).get(directory.id, _EMPTY)


def feed_read(*, directory: Directory, after: int, limit: int) -> FeedPage:
    """The directory's events numbered `after + 1`, `after + 2`, … in order, at most `limit`, and
    stopping before the first number missing (see the module's docstring). Raises FeedExpired when
    `after + 1` is gone to retention.

    The events are read first and the summary second: a purge running in between can only make the
    summary's `oldest_sequence` larger, so an empty run caused by that purge is still seen as expired.
    """
    rows = list(WebhookEvent.objects.filter(directory_id=directory.id, sequence__gt=after).order_by("sequence")[:limit])
    run: list[WebhookEvent] = []
    for event in rows:
        if event.sequence != after + 1 + len(run):
            break
        run.append(event)
    head = feed_head(directory=directory)
    if not run and _expired(after, head):
        oldest = head.oldest_sequence if head.oldest_sequence is not None else "none"
        raise FeedExpired(EXPIRED_MESSAGE.format(after=after, oldest=oldest))
    return FeedPage(events=run, head=head)


def _expired(after: int, head: FeedHead) -> bool:
    if head.oldest_sequence is None:
        # Nothing kept, yet numbers were given past `after`: those events were purged. (The counter and
        # the events it numbers commit together, so a number read here is not one still in flight.)
        return after < head.last_sequence
    return after < head.oldest_sequence - 1
