"""Keeping setup links' tokens out of logs.

The token is the part of `/setup/<token>/…` after the prefix, and whoever reads it can open the link. It
can reach a log three ways, each closed here:

- a line Roster or Django writes that quotes the path (a CSRF refusal, a 5xx, a lost database): the
  console handler's filter `SetupTokenMask` (the LOGGING setting) masks it in the formatted message;
- the web server's access log (granian's, off unless GRANIAN_LOG_ACCESS_ENABLED is set): server/web.py
  routes it through the same console handler, so the same filter masks the path in it, and a Referer
  too should an operator's access format print one;
- the 4xx line of config.requestscope names the route pattern (`setup/<str:token>`), never the path.

Imported by the LOGGING setting, so nothing here imports Django's apps.
"""

from __future__ import annotations

import logging
import re

_MARK = "/setup/"
_TOKEN_IN_PATH = re.compile(r"(/setup/)[^/?#\s\"'<>]+")
MASK = "***"


def token_mask(text: str) -> str:
    """`text` with the token of every setup path in it replaced by ***."""
    return _TOKEN_IN_PATH.sub(r"\g<1>" + MASK, text) if _MARK in text else text


def _mentions(value: object) -> bool:
    return isinstance(value, str) and _MARK in value


class SetupTokenMask(logging.Filter):
    """On the console handler: a record whose message or arguments quote a setup path is written with
    the token masked (its message formatted here, then masked)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        values = args.values() if isinstance(args, dict) else (args or ())
        if _mentions(record.msg) or any(_mentions(value) for value in values):
            record.msg = token_mask(record.getMessage())
            record.args = None
        return True
