"""`manage.py openapi_document [--output FILE]`: the REST API's OpenAPI document as JSON, exactly what
GET /api/v1/schema serves, without a server or a database. The client libraries are generated from it
(scripts/clients-generate.sh)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from restapi.openapi import rest_document


class Command(BaseCommand):
    help = "Write the REST API's OpenAPI document (JSON) to stdout or --output."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, help="Write to this file instead of stdout.")

    def handle(self, *args: Any, output: Path | None = None, **options: Any) -> None:
        text = json.dumps(rest_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        if output is None:
            self.stdout.write(text, ending="")
        else:
            output.write_text(text, encoding="utf-8")
