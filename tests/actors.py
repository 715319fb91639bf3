"""The Actor the tests hand the services when they set a scene, as an operator's command would: every
service that changes something records its audit entry from one (audit.actors).

A scene's own entries are not what a test reads: the persona fixtures forget them (`scene_trail_forget`), so a
test's assertions on the audit trail see only what its own actions recorded."""

from __future__ import annotations

from audit.actors import Actor

TEST_ACTOR = Actor(name="tests", via="manage.py")


def scene_trail_forget() -> None:
    """Drop the audit entries TEST_ACTOR made so far."""
    from audit.models import AuditEntry

    AuditEntry.objects.filter(details__actor=TEST_ACTOR.name, details__via=TEST_ACTOR.via).delete()
