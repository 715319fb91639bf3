"""`manage.py directories held <id> [--approve | --discard] [--ids ID [ID …]]` (contract §4.2): list the
changes a directory's deprovision guard holds, or approve or discard them (all, or those --ids names), as
`POST …/held-changes/approve|discard` do.

Handed to the directories command at start-up (directories.apps: the command imports this package, so this
module cannot sit in its subcommand table). Audited with the OS user who ran it, as every command is.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import command_actor
from core.errors import RosterError
from core.timefmt import iso_utc, iso_utc_or_none
from directories.guard.rendering import guard_state
from directories.guard.selectors import held_changes
from directories.guard.services import held_changes_resolve, held_resolve_input
from directories.management.commands.directories import Subcommand, table_lines

_COLUMNS = ("ID", "HELD AT", "USER", "CHANGE", "SCIM REQUEST")


def _arguments(parser: CommandParser) -> None:
    parser.add_argument("directory_id")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--approve", action="store_true", help="Apply them, in the order they were held.")
    action.add_argument("--discard", action="store_true", help="Drop them.")
    parser.add_argument(
        "--ids",
        nargs="+",
        metavar="ID",
        help="Only these held changes (with --approve, a user's earlier ones come along; with --discard, its "
        "later ones). Default: all.",
    )


def _handle(command: BaseCommand, options: dict[str, Any]) -> None:
    directory = command.directory(options["directory_id"])  # type: ignore[attr-defined]
    if not (options["approve"] or options["discard"]):
        if options["ids"]:
            raise CommandError("--ids goes with --approve or --discard.")
        _list(command, directory)
        return
    approve = bool(options["approve"])
    try:
        ids = held_resolve_input({"ids": options["ids"]} if options["ids"] else {})
        count = held_changes_resolve(directory=directory, ids=ids, approve=approve, actor=command_actor()).count
    except RosterError as exc:
        raise CommandError(exc.message) from None
    directory.refresh_from_db()
    verb, plural = ("Approved" if approve else "Discarded"), ("" if count == 1 else "s")
    command.stdout.write(f"{verb} {count} held change{plural}; the guard is {guard_state(directory)}.")


def _list(command: BaseCommand, directory: Any) -> None:
    rows = [
        (str(c.id), iso_utc(c.held_at), c.user_name, c.change, c.scim_request_id or "-")
        for c in held_changes(directory=directory)
    ]
    tripped = iso_utc_or_none(directory.guard_tripped_at)
    command.stdout.write(
        f"Deprovision guard: {guard_state(directory)}" + (f" (tripped at {tripped})" if tripped else "") + "."
    )
    if not rows:
        command.stdout.write("No held changes.")
        return
    for line in table_lines(_COLUMNS, rows):
        command.stdout.write(line)


SUBCOMMANDS = {
    "held": Subcommand(
        "List the changes a directory's deprovision guard holds, or --approve or --discard them (audited).",
        _arguments,
        _handle,
    ),
}
