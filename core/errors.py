"""Typed domain errors raised by services; each surface renders them in its own format."""

from __future__ import annotations


class RosterError(Exception):
    status = 400

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class ValidationFailed(RosterError):
    status = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(RosterError):
    status = 404


class Conflict(RosterError):
    status = 409
