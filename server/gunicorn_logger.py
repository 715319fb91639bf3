"""gunicorn's logger with Roster's JSON lines: `logger_class` in server/gunicorn.conf.py when LOG_FORMAT=json.

Why it exists: gunicorn formats its own lines (start, workers, refused requests, the access log) as
text, so a LOG_FORMAT=json deployment would mix text into its JSON stream. Its `logconfig_dict` setting
could change the format too, but any logging configuration makes gunicorn build the access-log fields
of every request (even with the access log off), which this does not. Delete it when gunicorn can be
given a formatter without that cost.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from core.logformat import JsonFormatter


class JsonLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        formatter = JsonFormatter()
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)
