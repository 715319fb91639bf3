"""Roster's logging (core.logformat.logging_config), applied by config/settings.py in place of Django's."""

from __future__ import annotations

import logging
import logging.config

from core.logformat import logging_config


def test_django_loggers_stay_at_info_whatever_the_root_level() -> None:
    # Django's DEFAULT_LOGGING (no longer applied) held django.* at INFO: under DEBUG, django.db.backends
    # logs each SQL statement with its parameters at DEBUG.
    logging.config.dictConfig(logging_config("plain", "DEBUG"))
    try:
        assert logging.getLogger().getEffectiveLevel() == logging.DEBUG
        assert logging.getLogger("django.db.backends").getEffectiveLevel() == logging.INFO
        assert not logging.getLogger("django.db.backends").isEnabledFor(logging.DEBUG)
    finally:
        from django.conf import settings

        logging.config.dictConfig(settings.LOGGING)


def test_settings_apply_roster_logging_without_djangos_defaults() -> None:
    from django.conf import settings

    assert settings.LOGGING_CONFIG is None
    handlers = logging.getLogger("django").handlers
    assert [type(h).__name__ for h in handlers] == []  # no mail_admins, no DEBUG-only console
