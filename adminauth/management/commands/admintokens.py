"""`manage.py admintokens list [--email E]` and `manage.py admintokens disable (--email E | --id ID)`.

`disable --email` switches off every token of that admin at once (a lost laptop, a leaver), which
also ends the JWTs issued with them; `disable --id` one token. Disabling is final and audited.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adminauth.selectors import admin_token_get, admin_token_list, admin_user_get_by_email
from adminauth.services import admin_token_disable, admin_tokens_disable_all
from audit.actors import command_actor


class Command(BaseCommand):
    help = "List or disable admin API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="{list,disable}")
        listing = sub.add_parser("list", help="List admin tokens (never the secrets).")
        listing.add_argument("--email", help="Only this admin's tokens.")
        disable = sub.add_parser("disable", help="Disable tokens; they stop working at once.")
        target = disable.add_mutually_exclusive_group(required=True)
        target.add_argument("--email", help="Disable every token of this admin.")
        target.add_argument("--id", dest="token_id", help="Disable this one token.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "list":
            self._list(options.get("email"))
        elif options.get("email"):
            self._disable_all(options["email"])
        else:
            self._disable_one(options["token_id"])

    def _admin(self, email: str) -> Any:
        user = admin_user_get_by_email(email=email)
        if user is None:
            raise CommandError(f"No admin with email {email!r}.")
        return user

    def _list(self, email: str | None) -> None:
        rows = list(admin_token_list(user=self._admin(email) if email else None))
        if not rows:
            self.stdout.write("No admin tokens.")
            return
        self.stdout.write(f"{'ID':<36}  {'ADMIN':<32}  {'CREATED':<20}  STATE")
        for row in rows:
            created = row.created_at.strftime("%Y-%m-%d %H:%M:%SZ")
            state = "disabled" if row.disabled else "active"
            self.stdout.write(f"{row.id!s:<36}  {row.user.email:<32}  {created:<20}  {state}")

    def _disable_all(self, email: str) -> None:
        user = self._admin(email)
        count = admin_tokens_disable_all(user=user, actor=command_actor())
        self.stdout.write(f"Disabled {count} token(s) of {user.email}.")

    def _disable_one(self, token_id: str) -> None:
        token = admin_token_get(token_id=token_id)
        if token is None:
            raise CommandError(f"No admin token with id {token_id!r}.")
        if token.disabled:
            self.stdout.write(f"Token {token.id} was already disabled.")
            return
        admin_token_disable(token=token, actor=command_actor())
        self.stdout.write(f"Disabled token {token.id} of {token.user.email}.")
