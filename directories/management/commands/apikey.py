"""`manage.py apikey create --name NAME | list | revoke <prefix-or-id>`: REST API keys kept in the database.

The key is printed once by `create` and never again: only its SHA-256 digest is stored. Creating and
revoking are audited with the OS user who ran the command.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import command_actor
from core.errors import ValidationFailed
from directories.selectors import api_key_find, api_key_list
from directories.services import api_key_create, api_key_revoke


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


class Command(BaseCommand):
    help = "Create, list and revoke REST API keys (Authorization: Bearer <key> on /api/v1)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="{create,list,revoke}")
        create = sub.add_parser("create", help="Create a key and print it once.")
        create.add_argument("--name", required=True, help="What the key is for, e.g. the client application.")
        sub.add_parser("list", help="List keys (never the keys themselves).")
        revoke = sub.add_parser("revoke", help="Revoke a key; it stops working at once.")
        revoke.add_argument("ref", help="The key's id (from `list`), its prefix, or the key itself.")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self._create(options["name"])
        elif action == "list":
            self._list()
        else:
            self._revoke(options["ref"])

    def _create(self, name: str) -> None:
        try:
            row, key = api_key_create(name=name, actor=command_actor())
        except ValidationFailed as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(key)
        self.stderr.write(
            f"Created API key {row.id} '{row.name}' (prefix {row.prefix}). "
            "This is the only time the key is shown: store it now."
        )

    def _list(self) -> None:
        rows = list(api_key_list())
        if not rows:
            self.stdout.write("No API keys in the database (keys from API_KEYS are not listed).")
            return
        header = f"{'ID':>4}  {'NAME':<30}  {'PREFIX':<12}  {'CREATED':<20}  REVOKED"
        self.stdout.write(header)
        for row in rows:
            self.stdout.write(
                f"{row.id:>4}  {row.name[:30]:<30}  {row.prefix:<12}  {_when(row.created_at):<20}  "
                f"{_when(row.revoked_at)}"
            )

    def _revoke(self, ref: str) -> None:
        matches = api_key_find(ref=ref)
        if not matches:
            raise CommandError(f"No API key matches {ref!r}. See `manage.py apikey list`.")
        if len(matches) > 1:
            ids = ", ".join(str(row.id) for row in matches)
            raise CommandError(f"{ref!r} matches several keys (ids {ids}); revoke by id.")
        row = matches[0]
        already = row.revoked_at is not None
        api_key_revoke(api_key=row, actor=command_actor())
        if already:
            self.stdout.write(f"API key {row.id} '{row.name}' ({row.prefix}) was already revoked.")
        else:
            self.stdout.write(f"Revoked API key {row.id} '{row.name}' ({row.prefix}).")
