"""The deprovision guard as the APIs show it (contract §4.2): the Directory's `guard`, and a held change."""

from __future__ import annotations

from typing import Any

from core.timefmt import iso_utc, iso_utc_or_none
from directories.guard.rules import guard_setting
from directories.guard.selectors import GuardFacts
from directories.models import Directory, HeldChange

ARMED, TRIPPED, OFF = "armed", "tripped", "off"


def guard_state(directory: Directory) -> str:
    """`off` when the setting is off; else `tripped` while changes are held; else `armed`. Changes held
    before the guard was turned off stay held (and shown in `held`) until a person resolves them."""
    if not guard_setting(directory.deprovision_guard)["enabled"]:
        return OFF
    return TRIPPED if directory.guard_tripped_at is not None else ARMED


def guard_data(directory: Directory, facts: GuardFacts) -> dict[str, Any]:
    return {
        "state": guard_state(directory),
        "held": facts.held,
        "tripped_at": iso_utc_or_none(directory.guard_tripped_at),
        "window_deprovisions": facts.window_deprovisions,
    }


def held_change_data(change: HeldChange) -> dict[str, Any]:
    return {
        "id": str(change.id),
        "held_at": iso_utc(change.held_at),
        "user_id": str(change.user_id),
        "user_name": change.user_name,
        "change": change.change,
        "scim_request_id": change.scim_request_id or None,
    }
