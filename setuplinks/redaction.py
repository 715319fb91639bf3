"""Keeping setup links' tokens out of logs.

The token is the part of `/setup/<token>/…` after the prefix, and whoever reads it can open the link. It
can reach a log three ways, each closed here:

- a line Roster or Django writes that quotes the path (a CSRF refusal, a 5xx, a lost database): the
  console handler's filter `SetupTokenMask` (the LOGGING setting) masks it in the formatted message;
- the web server's access log, which gunicorn writes after the answer from the request's WSGI environ
  (the request line, the path, and the Referer that a setup page's stylesheet and script requests
  carry): `environ_mask`, called by config.requestscope once the answer is made, masks those values in
  the environ itself;
- the 4xx line of config.requestscope names the route pattern (`setup/<str:token>`), never the path.

Imported by the LOGGING setting, so nothing here imports Django's apps.
"""

from __future__ import annotations

import logging
import re
from collections.abc import MutableMapping
from typing import Any

_MARK = "/setup/"
_TOKEN_IN_PATH = re.compile(r"(/setup/)[^/?#\s\"'<>]+")
MASK = "***"
# The environ values gunicorn's access log can print (%(r)s, %(U)s, %(f)s and the raw request line).
_ENVIRON_KEYS = ("PATH_INFO", "RAW_URI", "REQUEST_URI", "HTTP_REFERER")


def token_mask(text: str) -> str:
    """`text` with the token of every setup path in it replaced by ***."""
    return _TOKEN_IN_PATH.sub(r"\g<1>" + MASK, text) if _MARK in text else text


def environ_mask(environ: MutableMapping[str, Any]) -> None:
    for key in _ENVIRON_KEYS:
        value = environ.get(key)
        if isinstance(value, str) and _MARK in value:
            environ[key] = token_mask(value)


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
