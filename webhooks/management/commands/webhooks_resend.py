"""`manage.py webhooks_resend --directory ID --from A [--to B]` or `--event-id ID [--event-id ID …]`: one
more attempt of chosen events of a directory (contract §5.1), as `POST …/changes/resend` does.

`--to` defaults to the newest event, at most 1000 events from A. The resend is audited with the OS user
who ran the command.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import command_actor
from core.errors import RosterError
from directories.selectors import directory_get
from webhooks.selectors import event_sequence_last
from webhooks.services import RESEND_MAX, changes_resend, drain_pool, resend_range_end


def _number(raw: str | None) -> Any:
    """An option's value as an int when it is digits; anything else is passed on for the service to
    refuse with its own message (argparse's own refusal would be a usage text and exit code 2)."""
    if raw is None:
        return None
    text = raw.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else text


class Command(BaseCommand):
    help = (
        "Ask for one more attempt of a directory's events, by sequence range (--from, --to) or by id "
        "(--event-id, repeatable), to the directory's current webhook URL. Never automatic; audited."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--directory", required=True, help="The directory's id.")
        parser.add_argument("--from", dest="first", help="The first sequence number to resend.")
        parser.add_argument(
            "--to",
            dest="last",
            help=f"The last one, inclusive (default: the newest event, at most {RESEND_MAX} events from --from).",
        )
        parser.add_argument(
            "--event-id", dest="event_ids", action="append", help="An event id to resend; may be repeated."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        directory = directory_get(directory_id=options["directory"])
        if directory is None:
            raise CommandError(f"No directory with id {options['directory']!r}.")
        first, last, event_ids = _number(options["first"]), _number(options["last"]), options["event_ids"]
        if event_ids is not None and (first is not None or last is not None):
            raise CommandError("Give either --from (and --to) or --event-id, not both.")
        if event_ids is None and first is None:
            raise CommandError("Give --from A [--to B] or --event-id ID.")
        if event_ids is None and last is None:
            last = resend_range_end(first, event_sequence_last(directory=directory))
        try:
            queued = changes_resend(
                directory=directory,
                first=None if event_ids is not None else first,
                last=None if event_ids is not None else last,
                event_ids=event_ids,
                actor=command_actor(),
            )
        except RosterError as exc:
            raise CommandError(exc.message) from None
        if queued and not settings.CELERY_BROKER_URL:
            # In-process mode: deliver before the command's process exits, or the work would wait for the sweep.
            drain_pool.drain()
        self.stdout.write(f"queued {queued} event(s) of directory {directory.id} for one more attempt")
