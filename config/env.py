"""The one place that reads the process environment (contract §2)."""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()


def require(name: str, reason: str) -> str:
    """Return a required setting or stop start-up naming it."""
    value = env.str(name, default="")
    if not value:
        raise ImproperlyConfigured(f"Setting {name} is required ({reason}). Set it in the environment.")
    return value
