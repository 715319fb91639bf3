#!/usr/bin/env python
"""Django's command-line utility for Roster."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A required setting is missing or malformed (contract §2): the message names it and says how to
        # set it; a traceback would add nothing for the operator (`manage.py doctor` included).
        sys.stderr.write(f"Roster is not configured: {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
