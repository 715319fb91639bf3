"""`manage.py createadmin --email E [--password-stdin]`: an admin who can sign in to the portal.

Without `--password-stdin` the password is asked twice on the terminal (getpass, never echoed);
with it, the first line of standard input is the password, for scripts:
`printf '%s\\n' "$PW" | manage.py createadmin --email ops@example.com --password-stdin`.
Run it again for an existing admin to set a new password (and re-enable a disabled admin).
"""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adminauth.services import admin_user_create
from audit.actors import command_actor
from core.errors import ValidationFailed


class Command(BaseCommand):
    help = "Create an admin (or set an existing admin's password) for portal sign-in."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", required=True, help="The admin's email (compared case-insensitively).")
        parser.add_argument(
            "--password-stdin", action="store_true", help="Read the password from the first line of stdin."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        password = self._password_from_stdin() if options["password_stdin"] else self._password_prompt()
        try:
            user, created = admin_user_create(email=options["email"], password=password, actor=command_actor())
        except ValidationFailed as exc:
            raise CommandError(exc.message) from None
        verb = "Created admin" if created else "Set a new password for admin"
        self.stdout.write(f"{verb} {user.email} ({user.id}).")

    def _password_from_stdin(self) -> str:
        line = sys.stdin.readline()
        # Only the line ending is dropped: spaces inside or around a password are part of it.
        return line.rstrip("\r\n")

    def _password_prompt(self) -> str:
        if not sys.stdin.isatty():
            raise CommandError("No terminal to ask for the password on: use --password-stdin.")
        try:
            first = getpass.getpass("Password: ")
            second = getpass.getpass("Password (again): ")
        except (EOFError, KeyboardInterrupt):
            raise CommandError("Cancelled.") from None
        if first != second:
            raise CommandError("The passwords do not match.")
        return first
