"""`manage.py doctor`: checks what a deployment needs and says how to fix what is wrong (contract §7.1).

One line per finding, aligned; coloured on a terminal and plain when piped (Django's styles, also
`--no-color`/`--force-color`). Exits 1 when any finding is a problem, 0 otherwise. The checks are in
operations/doctor.py.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from operations.doctor import FAIL, INFO, OK, WARN, Doctor, Finding

_LABELS = {OK: "ok", INFO: "info", WARN: "warn", FAIL: "FAIL"}


class Command(BaseCommand):
    help = (
        "Check settings, database, migrations, broker, a live worker, beat, the webhook outbox and the clock; "
        "print each finding with its fix; exit 1 on a problem."
    )
    requires_system_checks: list[str] = []  # doctor reports problems itself, it must start even with them
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--worker-timeout",
            type=float,
            default=10.0,
            help="Seconds to wait for a worker to answer the ping (default: %(default)s).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        timeout = options["worker_timeout"]
        if not 0 < timeout <= 300:
            self.stderr.write("--worker-timeout must be between 0 and 300 seconds.")
            sys.exit(2)
        findings = Doctor(worker_timeout=timeout).run()
        width = max(len(f.check) for f in findings)
        for finding in findings:
            self.stdout.write(self._line(finding, width))
        problems = sum(1 for f in findings if f.status == FAIL)
        warnings = sum(1 for f in findings if f.status == WARN)
        summary = f"{problems} problem(s), {warnings} warning(s)."
        self.stdout.write(self.style.ERROR(summary) if problems else self.style.SUCCESS(summary))
        if problems:
            sys.exit(1)

    def _line(self, finding: Finding, width: int) -> str:
        label = f"{_LABELS[finding.status]:<4}"
        style = {OK: self.style.SUCCESS, WARN: self.style.WARNING, FAIL: self.style.ERROR}.get(finding.status)
        text = f"{style(label) if style else label}  {finding.check:<{width}}  {finding.message}"
        if finding.fix and finding.status != OK:
            text += f". Fix: {finding.fix}."
        return text
