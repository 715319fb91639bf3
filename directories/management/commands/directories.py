"""`manage.py directories list [--tenant T] [--product P] | show <id> | export <id> [--at TIME] [--output FILE]`, and
the subcommands handed in at start-up (`held`: directories.guard.commands; `setup-link`, `setup-links`,
`setup-link-revoke`: setuplinks.commands).

For operators on the host (contract §7.1). Never prints a secret: the SCIM and webhook secrets are read
in the portal or over the API. `export` writes JSON lines, `{"type": "user"|"group", "data": <the REST
shape>}`, users first then groups (each group with its `members`), oldest first, reading the directory
in chunks so memory stays flat; it shows a progress bar on stderr when that is a terminal and the lines
do not go to the same terminal, and one plain summary line otherwise. With `--at` (a time, or an event
number) it writes the directory as it was then (contract §5.3): each user with its `groups` then, each group
with its `members` then; history hands that reader in at start-up (`export_at_set`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.text import text_problem
from core.timefmt import iso_utc_or_none
from directories.guard.rendering import guard_state
from directories.guard.rules import guard_setting
from directories.guard.selectors import guard_facts
from directories.models import Directory
from directories.rendering import group_with_members_data, scim_endpoint, users_data
from directories.selectors import (
    directory_get,
    directory_groups,
    directory_groups_with_members,
    directory_list_with_counts,
    directory_users,
)

_COLUMNS = ("ID", "NAME", "TENANT", "PRODUCT", "TYPE", "USERS", "GROUPS", "STATE")


@dataclass(frozen=True)
class Subcommand:
    """A subcommand whose code sits above this module (in the layers of pyproject.toml, or in its own imports),
    handed in by its app at start-up (`subcommand_add` from the app's ready()). `handle` gets the command (for its
    stdout and `directory()`) and the parsed options."""

    help: str
    arguments: Callable[[CommandParser], None]
    handle: Callable[[BaseCommand, dict[str, Any]], None]


_SUBCOMMANDS: dict[str, Subcommand] = {}


def subcommand_add(name: str, subcommand: Subcommand) -> None:
    _SUBCOMMANDS[name] = subcommand


# `export --at`: (directory, the point as typed) -> (a line saying which point, the rows of the snapshot).
# Handed in by history.apps, which sits above this app; it raises CommandError for a point it cannot show.
ExportAt = Callable[[Directory, str], tuple[str, Iterator[tuple[str, dict[str, Any]]]]]
_export_at: list[ExportAt] = []


def export_at_set(reader: ExportAt) -> None:
    _export_at[:] = [reader]


class Command(BaseCommand):
    help = "List directories, show one, or export its users and groups as JSON lines (never secrets)."

    def add_arguments(self, parser: CommandParser) -> None:
        names = ",".join(["list", "show", "export", *_SUBCOMMANDS])
        sub = parser.add_subparsers(dest="action", required=True, metavar=f"{{{names}}}")
        listing = sub.add_parser("list", help="Every directory (of a tenant, of a product), oldest first.")
        listing.add_argument("--tenant", help="Only this tenant's directories.")
        listing.add_argument("--product", help="Only this product's directories.")
        show = sub.add_parser("show", help="One directory's settings and counts.")
        show.add_argument("directory_id")
        export = sub.add_parser("export", help="A directory's users and groups as JSON lines.")
        export.add_argument("directory_id")
        export.add_argument("--output", "-o", help="Write to this file instead of standard output.")
        export.add_argument(
            "--at", help="The directory as it was at this time (ISO 8601 with a time zone) or after this event number."
        )
        for name, subcommand in _SUBCOMMANDS.items():
            subcommand.arguments(sub.add_parser(name, help=subcommand.help))

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "list":
            self._list(options.get("tenant"), options.get("product"))
        elif action == "show":
            self._show(self.directory(options["directory_id"]))
        elif action == "export":
            self._export(self.directory(options["directory_id"]), options.get("output"), options.get("at"))
        else:
            _SUBCOMMANDS[action].handle(self, options)

    @staticmethod
    def directory(directory_id: str) -> Directory:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise CommandError(f"No directory has the id {directory_id!r}. See `manage.py directories list`.")
        return directory

    def _list(self, tenant: str | None, product: str | None) -> None:
        for option, value in (("--tenant", tenant), ("--product", product)):
            problem = text_problem(value) if value is not None else None
            if problem:  # e.g. bytes that are not UTF-8 in the argument: the database cannot compare them
                raise CommandError(f"{option} {problem}.")
        rows = [
            (
                str(d.id),
                d.name[:40],
                d.tenant,
                d.product,
                d.type,
                str(d.user_count),
                str(d.group_count),
                "deactivated" if d.deactivated else "active",
            )
            for d in directory_list_with_counts(tenant=tenant, product=product)
        ]
        if not rows:
            self.stdout.write("No directories.")
            return
        for line in table_lines(_COLUMNS, rows):
            self.stdout.write(line)

    def _show(self, directory: Directory) -> None:
        fields = [
            ("id", str(directory.id)),
            ("name", directory.name),
            ("tenant", directory.tenant),
            ("product", directory.product),
            ("type", directory.type),
            ("state", "deactivated" if directory.deactivated else "active"),
            ("scim endpoint", scim_endpoint(directory)),
            ("webhook", directory.webhook_url or "none"),
            ("delivery log", "on" if directory.log_webhook_events else "off"),
            ("guard", _guard_line(directory)),
            ("users", str(directory_users(directory=directory).count())),
            ("groups", str(directory_groups(directory=directory).count())),
            ("created", iso_utc_or_none(directory.created_at) or "-"),
            ("secrets", "not shown: read them in the portal or over the API"),
        ]
        width = max(len(name) for name, _ in fields)
        for name, value in fields:
            self.stdout.write(f"{name:<{width}}  {value}")

    def _export(self, directory: Directory, output: str | None, at: str | None = None) -> None:
        if at is not None:
            if not _export_at:
                raise CommandError("--at needs the history app.")
            point, rows = _export_at[0](directory, at)
            total = None
        else:
            point, rows = "", _export_rows(directory)
            total = directory_users(directory=directory).count() + directory_groups(directory=directory).count()
        try:
            target: IO[str] = open(output, "w", encoding="utf-8") if output else self.stdout  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"Cannot write {output}: {exc.strerror}.") from None
        to_terminal = output is None and self.stdout.isatty()
        # Imported here: every process loads this module at start (directories.apps), few ever export.
        from tqdm import tqdm

        bar = tqdm(total=total, unit="row", file=sys.stderr, disable=to_terminal or not sys.stderr.isatty())
        counts = {"user": 0, "group": 0}
        try:
            for kind, data in rows:
                target.write(orjson.dumps({"type": kind, "data": data}).decode() + "\n", **_no_ending(target))
                counts[kind] += 1
                bar.update(1)
        except BrokenPipeError:
            # The reader stopped (`| head`): stop too, quietly, as command-line tools do. Standard output is
            # pointed at /dev/null so that Python's own flush at exit does not report the closed pipe.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            raise CommandError(f"Cannot write {output or 'standard output'}: {exc.strerror}.") from None
        finally:
            bar.close()
            if output:
                target.close()
            else:
                target.flush()
        where = output or "standard output"
        summary = f"Exported {counts['user']} users and {counts['group']} groups of {directory.id}{point} to {where}."
        self.stderr.write(summary, style_func=str)  # information, not the error colour of stderr


def _guard_line(directory: Directory) -> str:
    """The deprovision guard's state, its limits and what it holds (`directories held <id>` lists them)."""
    setting = guard_setting(directory.deprovision_guard)
    facts = guard_facts([directory])[directory.id]
    limits = f"{setting['max_users']} users and {setting['max_percent']} % in {setting['window_minutes']} min"
    held = f"; {facts.held} held (see `directories held {directory.id}`)" if facts.held else ""
    return f"deprovision guard {guard_state(directory)} (limits: {limits}){held}"


def table_lines(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """`columns` and `rows` as lines of a plain table, each column as wide as its widest value."""
    widths = [max(len(column), *(len(row[i]) for row in rows)) for i, column in enumerate(columns)]
    return ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in [columns, *rows]]


def _no_ending(target: Any) -> dict[str, str]:
    """Django's OutputWrapper adds a line ending of its own unless told not to; a file does not."""
    return {"ending": ""} if hasattr(target, "style_func") else {}


def _export_rows(directory: Directory, chunk: int = 1000) -> Iterator[tuple[str, dict[str, Any]]]:
    users: list[Any] = []
    for user in directory_users(directory=directory).iterator(chunk_size=chunk):
        users.append(user)
        if len(users) == chunk:
            yield from (("user", data) for data in users_data(users, {directory.id: directory}))
            users = []
    yield from (("user", data) for data in users_data(users, {directory.id: directory}))
    for group, member_ids in directory_groups_with_members(directory=directory):
        yield "group", group_with_members_data(group, member_ids)
