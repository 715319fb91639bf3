"""History and the changes feed's retention (contract §5.1, §5.3), how points are named, and held changes
(contract §4.2) entering history only once approved."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import ValidationFailed
from directories.guard.services import held_changes_resolve
from directories.models import Directory, HeldChange
from history.models import HistoryPoint, UserVersion
from history.selectors import HistoryGone, history_point, snapshot_users
from history.services import history_catch_up, history_fold_all, history_prune
from tests.actors import TEST_ACTOR
from tests.history.kit import history_view, last_sequence, rest_view
from tests.scim.conftest import PATCH_URN, Scim, user_body
from tests.scim.guardkit import guard_set
from webhooks.models import EventState, WebhookEvent
from webhooks.services.sweeping import feed_purge

pytestmark = pytest.mark.django_db


def _users(scim: Scim, count: int) -> list[str]:
    ids = []
    for i in range(count):
        status, body = scim.post("/Users", user_body(f"u{i}@example.com"))
        assert status == 201, body
        ids.append(body["id"])
    return ids


def _age(directory: Directory, up_to: int, days: int) -> None:
    """Make the directory's events numbered up to `up_to` finished and `days` old, as the purge finds them."""
    WebhookEvent.objects.filter(directory_id=directory.id, sequence__lte=up_to).update(
        state=EventState.DROPPED, created_at=timezone.now() - timedelta(days=days)
    )


def test_the_purge_folds_first_and_history_answers_from_the_cut(directory_a: Directory, scim_a: Scim) -> None:
    ids = _users(scim_a, 3)
    scim_a.delete(f"/Users/{ids[0]}")
    early = last_sequence(directory_a)
    assert scim_a.ops(f"/Users/{ids[1]}", {"op": "replace", "value": {"active": False}})[0] == 200
    at_cut = rest_view(directory_a)
    _users(scim_a, 1)
    _age(directory_a, at_cut["sequence"] - 1, days=40)
    # Nothing was folded before: the purge's hook folds every event before deleting any.
    assert feed_purge(before=timezone.now() - timedelta(days=30)) == at_cut["sequence"] - 1
    cut = at_cut["sequence"]
    assert history_view(directory_a, cut)["users"] == at_cut["users"]
    with pytest.raises(HistoryGone) as gone:
        history_point(directory=directory_a, sequence=early)
    earliest = HistoryPoint.objects.get(directory=directory_a, sequence=cut).created_at
    assert earliest.strftime("%Y-%m-%dT%H:%M:%S") in gone.value.message
    with pytest.raises(HistoryGone):
        history_point(directory=directory_a, at=timezone.now() - timedelta(days=35))
    # Trimming removes what no kept point shows, and changes no answer.
    assert history_prune(directory=directory_a) > 0
    assert not UserVersion.objects.filter(directory=directory_a, user_id=ids[0]).exists()
    assert history_view(directory_a, cut)["users"] == at_cut["users"]


def test_history_installed_after_a_purge_starts_from_the_present(directory_a: Directory, scim_a: Scim) -> None:
    _users(scim_a, 2)
    now = rest_view(directory_a)
    _age(directory_a, now["sequence"], days=40)
    WebhookEvent.objects.filter(directory_id=directory_a.id).delete()
    history_catch_up(directory=directory_a)
    assert history_view(directory_a, now["sequence"])["users"] == now["users"]
    with pytest.raises(HistoryGone):
        history_point(directory=directory_a, sequence=now["sequence"] - 1)


def test_points_by_time_and_their_errors(directory_a: Directory, scim_a: Scim) -> None:
    empty = history_point(directory=directory_a, at=timezone.now())
    assert empty.sequence == 0 and empty.created_at is None
    _users(scim_a, 2)
    history_fold_all()
    first = HistoryPoint.objects.get(directory=directory_a, sequence=1)
    assert history_point(directory=directory_a, at=first.created_at).sequence == 1
    # The time an event shows (milliseconds, as its payload and `as_of` say it) names that event's point.
    shown = first.created_at.replace(microsecond=first.created_at.microsecond // 1000 * 1000)
    assert history_point(directory=directory_a, at=shown).sequence == 1
    if shown - timedelta(milliseconds=1) >= directory_a.created_at:
        assert history_point(directory=directory_a, at=shown - timedelta(milliseconds=1)).sequence == 0
    assert history_point(directory=directory_a, at=timezone.now()).sequence == 2
    # While the feed keeps its first event, history reaches back to the directory's creation: empty then.
    assert history_point(directory=directory_a, at=directory_a.created_at).sequence == 0
    assert history_point(directory=directory_a, sequence=0).sequence == 0
    point = history_point(directory=directory_a, sequence=0)
    assert snapshot_users(directory=directory_a, point=point, offset=0, limit=10) == []
    with pytest.raises(ValidationFailed):
        history_point(directory=directory_a, at=timezone.now() + timedelta(minutes=5))
    with pytest.raises(ValidationFailed):
        history_point(directory=directory_a, sequence=3)
    with pytest.raises(HistoryGone) as gone:
        history_point(directory=directory_a, at=directory_a.created_at - timedelta(seconds=1))
    assert directory_a.created_at.strftime("%Y-%m-%dT%H:%M:%S") in gone.value.message


def test_a_held_change_enters_history_once_approved(directory_a: Directory, scim_a: Scim) -> None:
    guard_set(directory_a, enabled=True, max_users=1, max_percent=1, window_minutes=60)
    ids = _users(scim_a, 4)
    deactivate = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "value": {"active": False}}]}
    for user_id in ids[:3]:
        assert scim_a.patch(f"/Users/{user_id}", deactivate)[0] == 200
    assert HeldChange.objects.filter(directory=directory_a).count() == 2
    before = rest_view(directory_a)
    seen = history_view(directory_a, before["sequence"])
    assert seen["users"] == before["users"]
    assert [u["active"] for u in seen["users"]] == [False, True, True, True]
    held_changes_resolve(actor=TEST_ACTOR, directory=directory_a, ids=None, approve=True)
    after = rest_view(directory_a)
    assert after["sequence"] == before["sequence"] + 2
    assert history_view(directory_a, after["sequence"])["users"] == after["users"]
    point = history_point(directory=directory_a, sequence=after["sequence"])
    assert [u["active"] for u in snapshot_users(directory=directory_a, point=point, offset=0, limit=10)] == [
        False,
        False,
        False,
        True,
    ]
    assert [
        u["id"] for u in snapshot_users(directory=directory_a, point=point, offset=1, limit=2, active=False)
    ] == ids[1:3]


def test_beat_folds_and_trims(directory_a: Directory, scim_a: Scim) -> None:
    from config.celery import app
    from history import tasks

    schedule = {entry["task"]: entry["schedule"] for entry in app.conf.beat_schedule.values()}
    assert schedule["history.fold"] <= 60 and "history.prune" in schedule
    assert app.tasks["history.fold"].name == tasks.history_fold.name
    ids = _users(scim_a, 3)
    assert tasks.history_fold() == {"directories": 1, "events": 3}
    assert tasks.history_fold() == {"directories": 0, "events": 0}
    scim_a.delete(f"/Users/{ids[0]}")
    _age(directory_a, 2, days=40)
    feed_purge(before=timezone.now() - timedelta(days=30))  # folds event 4 first, then deletes 1 and 2
    result = tasks.history_prune()
    assert result["events"] == 0 and result["pruned"] >= 2
    assert HistoryPoint.objects.filter(directory=directory_a).order_by("sequence").first().sequence == 3
