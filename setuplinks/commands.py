"""`manage.py directories setup-link <id> [--expires-in S] [--return-url URL] [--allow-mapping]`, and
`directories setup-links <id>` (list) and `directories setup-link-revoke <id> <link id>` (contract §3.1).

Handed to the directories command at start-up (setuplinks.apps). Audited with the OS user who ran the
command, as every command is. The link's URL is printed once, on creation; a list never
shows a token (none is kept).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from audit.actors import command_actor
from core.errors import RosterError
from core.timefmt import iso_utc, iso_utc_or_none
from directories.management.commands.directories import Subcommand, table_lines
from setuplinks.rendering import setup_link_url
from setuplinks.selectors import setup_link_get, setup_link_list
from setuplinks.services import EXPIRES_IN_DEFAULT, setup_link_create, setup_link_input, setup_link_revoke

_LIST_COLUMNS = ("ID", "STATUS", "CREATED", "EXPIRES", "OPENED", "CREATED BY")


def _number(raw: str) -> Any:
    """The option as an int when it is digits; anything else goes to the service, which names the bounds."""
    text = raw.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else text


def _create_arguments(parser: CommandParser) -> None:
    parser.add_argument("directory_id")
    parser.add_argument(
        "--expires-in",
        default=str(EXPIRES_IN_DEFAULT),
        help=f"Seconds the link works, 300 to 2592000 (default {EXPIRES_IN_DEFAULT}: 3 days).",
    )
    parser.add_argument("--return-url", default="", help='Where the page\'s "Done" link goes (https).')
    parser.add_argument(
        "--allow-mapping", action="store_true", help="Let the IT admin edit the attribute and role maps."
    )


def _create(command: BaseCommand, options: dict[str, Any]) -> None:
    directory = command.directory(options["directory_id"])  # type: ignore[attr-defined]
    data = {
        "expires_in": _number(options["expires_in"]),
        "return_url": options["return_url"],
        "allow_mapping": options["allow_mapping"],
    }
    try:
        link, token = setup_link_create(directory=directory, actor=command_actor(), asked=setup_link_input(data))
    except RosterError as exc:
        raise CommandError(exc.message) from None
    command.stdout.write(setup_link_url(token))
    command.stderr.write(
        f"Setup link {link.id} for {directory.name}, works until {iso_utc(link.expires_at)}. "
        "The URL is shown only now.",
        style_func=str,  # information, not the error colour of stderr
    )


def _list_arguments(parser: CommandParser) -> None:
    parser.add_argument("directory_id")


def _list(command: BaseCommand, options: dict[str, Any]) -> None:
    directory = command.directory(options["directory_id"])  # type: ignore[attr-defined]
    now = timezone.now()
    rows = [
        (
            str(link.id),
            link.status_at(now),
            iso_utc(link.created_at),
            iso_utc(link.expires_at),
            f"{link.opened_count} (last {iso_utc_or_none(link.last_opened_at) or '-'})",
            link.created_by,
        )
        for link in setup_link_list(directory=directory)
    ]
    if not rows:
        command.stdout.write("No setup links.")
        return
    for line in table_lines(_LIST_COLUMNS, rows):
        command.stdout.write(line)


def _revoke_arguments(parser: CommandParser) -> None:
    parser.add_argument("directory_id")
    parser.add_argument("link_id")


def _revoke(command: BaseCommand, options: dict[str, Any]) -> None:
    directory = command.directory(options["directory_id"])  # type: ignore[attr-defined]
    link = setup_link_get(directory=directory, link_id=options["link_id"])
    if link is None:
        raise CommandError(f"No setup link of this directory has the id {options['link_id']!r}.")
    link = setup_link_revoke(link=link, actor=command_actor())
    command.stdout.write(f"Setup link {link.id} revoked at {iso_utc(link.revoked_at)}.")  # type: ignore[arg-type]


SUBCOMMANDS = {
    "setup-link": Subcommand(
        "Create a setup link for a directory's IT admin; prints its URL (shown once).", _create_arguments, _create
    ),
    "setup-links": Subcommand("List a directory's setup links, newest first (never a token).", _list_arguments, _list),
    "setup-link-revoke": Subcommand("Revoke a setup link now, on every node.", _revoke_arguments, _revoke),
}
