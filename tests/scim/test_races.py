"""Races on PostgreSQL through the SCIM HTTP path: real threads, each with its own Django test client and
database connection, against committed data (transaction mode).

What is checked is what an identity provider and the application behind the webhooks rely on: one user
per userName whatever the case, no lost or torn update (the final state is the outcome of some serial
order of the acknowledged writes, compatible with their real-time order), one event per write that
changed something, no dangling membership, no deadlock, no 500, and list pages that neither skip nor
repeat a user while writes go on. On SQLite these skip (one writer at a time, nothing to race); CI runs
them on PostgreSQL.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from directories.models import Directory, DirectoryUser, GroupMembership
from tests.scim.conftest import PATCH_URN, Scim, group_body, user_body
from tests.scim.test_concurrency import _parallel, _postgres_only  # noqa: F401 - the skip on SQLite
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@dataclass
class Answer:
    """One acknowledged (or refused) request: its status, body, and when it ran (time.monotonic())."""

    status: int
    body: Any
    started: float
    ended: float


def _timed(call: Callable[[], tuple[int, Any]]) -> Answer:
    started = time.monotonic()
    status, body = call()
    return Answer(status, body, started, time.monotonic())


def _answers(results: list[Any]) -> list[Answer]:
    """The answers of `_parallel`; an exception raised in a thread fails the test here, with itself."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _events(directory: Directory, event_type: str) -> list[dict[str, Any]]:
    """The directory's recorded events of one type, in outbox (delivery) order."""
    rows = WebhookEvent.objects.filter(directory_id=directory.id, event_type=event_type).order_by("created_at", "id")
    return [json.loads(body) for body in rows.values_list("body", flat=True)]


def _members_patch(op: str, user_ids: list[str]) -> dict[str, Any]:
    return {
        "schemas": [PATCH_URN],
        "Operations": [{"op": op, "path": "members", "value": [{"value": u} for u in user_ids]}],
    }


def _create_users(directory: Directory, prefix: str, n: int) -> list[str]:
    scim = Scim(directory)
    ids = []
    for i in range(n):
        status, body = scim.post("/Users", user_body(f"{prefix}{i}@race.example"))
        assert status == 201, body
        ids.append(body["id"])
    return ids


def _create_group(directory: Directory, name: str) -> str:
    status, body = Scim(directory).post("/Groups", group_body(name))
    assert status == 201, body
    return body["id"]


def test_twenty_parallel_creates_of_one_username_in_mixed_case(scim_hooked: Scim) -> None:
    directory = scim_hooked.directory
    base = "race.case@example.com"
    # Twenty spellings of one userName, differing only in case (userName is case-insensitive).
    letters = [k for k, c in enumerate(base) if c.isalpha()]
    spellings = [
        "".join(c.upper() if k in letters[:5] and (i >> letters.index(k)) & 1 else c for k, c in enumerate(base))
        for i in range(20)
    ]
    assert len(set(spellings)) == 20
    results = _answers(
        _parallel(
            [lambda name=name: _timed(lambda: Scim(directory).post("/Users", user_body(name))) for name in spellings]
        )
    )
    assert sorted(a.status for a in results) == [201] + [409] * 19, [a.body for a in results]
    assert all(a.body["scimType"] == "uniqueness" for a in results if a.status == 409)
    created = next(a.body for a in results if a.status == 201)
    assert list(DirectoryUser.objects.filter(directory=directory).values_list("id", flat=True)) == [
        uuid.UUID(created["id"])
    ]
    assert [e["data"]["id"] for e in _events(directory, "user.created")] == [created["id"]]


def _emails(raw: dict[str, Any]) -> list[str]:
    return [e["value"] for e in raw.get("emails", [])]


def test_a_hundred_interleaved_puts_and_patches_of_one_user_are_serializable(scim_hooked: Scim) -> None:
    """50 PUTs (each a whole new document: its own name and a single email put<i>), 40 PATCHes (each adds
    its own email patch<j>), 10 PATCHes that change nothing (replace active with true). Whatever the
    interleaving, the final document must be: the last PUT's document plus the emails of exactly those
    PATCHes serialized after it, in an order that respects real time (a request that ended before
    another started comes first)."""
    directory = scim_hooked.directory
    status, created = scim_hooked.post("/Users", user_body("multi@race.example", name={"givenName": "Init"}))
    assert status == 201
    path = f"/Users/{created['id']}"

    def put(i: int) -> Callable[[], Answer]:
        body = user_body(
            "multi@race.example",
            name={"givenName": f"P{i}", "familyName": f"P{i}"},
            emails=[{"primary": True, "value": f"put{i}@race.example", "type": "work"}],
        )
        return lambda: _timed(lambda: Scim(directory).put(path, body))

    def add_email(j: int) -> Callable[[], Answer]:
        op = {"op": "add", "path": "emails", "value": [{"value": f"patch{j}@race.example", "type": "other"}]}
        return lambda: _timed(lambda: Scim(directory).ops(path, op))

    def no_op() -> Answer:
        return _timed(lambda: Scim(directory).ops(path, {"op": "replace", "path": "active", "value": True}))

    kinds: list[tuple[str, int]] = []
    jobs: list[Callable[[], Answer]] = []
    for n in range(100):  # interleaved: put, patch, put, patch, ..., with a no-op every tenth request
        if n % 10 == 9:
            kinds.append(("noop", n))
            jobs.append(no_op)
        elif n % 2 == 0:
            kinds.append(("put", n // 2))
            jobs.append(put(n // 2))
        else:
            kinds.append(("patch", len([k for k in kinds if k[0] == "patch"])))
            jobs.append(add_email(kinds[-1][1]))
    answers = _answers(_parallel(jobs))
    assert all(a.status in (200, 204) for a in answers), [
        (k, a.status, a.body) for k, a in zip(kinds, answers, strict=True)
    ]

    final = DirectoryUser.objects.get(pk=created["id"])
    emails = _emails(final.raw)
    puts = [e for e in emails if e.startswith("put")]
    assert len(puts) == 1, emails  # one PUT's document, never two torn together
    last_put = int(puts[0][3 : puts[0].index("@")])
    assert final.raw["name"] == {"givenName": f"P{last_put}", "familyName": f"P{last_put}"}
    assert (final.first_name, final.last_name, final.email) == (f"P{last_put}", f"P{last_put}", puts[0])
    after = {int(e[5 : e.index("@")]) for e in emails if e.startswith("patch")}
    assert len(emails) == 1 + len(after), emails  # nothing else, nothing twice

    # A serial order that yields this state: every other write before the last PUT, the PATCHes whose
    # email survived after it; within each part, by start time (a valid order whenever one exists).
    timed = {kind: a for kind, a in zip(kinds, answers, strict=True) if kind[0] != "noop"}
    before = sorted(
        (k for k in timed if k != ("put", last_put) and k not in {("patch", j) for j in after}),
        key=lambda k: timed[k].started,
    )
    later = sorted((("patch", j) for j in after), key=lambda k: timed[k].started)
    order = [*before, ("put", last_put), *later]
    for i, first in enumerate(order):
        for second in order[i + 1 :]:
            assert not timed[second].ended < timed[first].started, (
                f"{second} ended before {first} started, yet the final state puts it after"
            )

    # One user.updated per write that changed something (every PUT and adding PATCH; no no-op), and the
    # last one, in delivery order, carries the final document.
    updates = _events(directory, "user.updated")
    assert len(updates) == 90
    assert updates[-1]["data"]["raw"] == final.raw


def test_deleting_users_while_patches_add_them_to_groups_leaves_no_dangling_membership(scim_hooked: Scim) -> None:
    directory = scim_hooked.directory
    users = _create_users(directory, "gone", 10)
    groups = [_create_group(directory, f"Target {g}") for g in range(10)]
    jobs: list[Callable[[], Answer]] = []
    for g, group in enumerate(groups):
        wanted = users[g:] + users[:g]  # each group adds every user, starting somewhere else

        def add(group: str = group, wanted: list[str] = wanted) -> Answer:
            return _timed(lambda: Scim(directory).patch(f"/Groups/{group}", _members_patch("add", wanted)))

        jobs.append(add)
    for user in users:
        jobs.append(lambda user=user: _timed(lambda: Scim(directory).delete(f"/Users/{user}")))
    answers = _answers(_parallel(jobs))
    patches, deletes = answers[: len(groups)], answers[len(groups) :]
    assert all(a.status == 204 for a in deletes), [a.body for a in deletes]
    assert all(a.status in (204, 400, 404) for a in patches), [(a.status, a.body) for a in patches]
    assert not DirectoryUser.objects.filter(directory=directory).exists()
    assert not GroupMembership.objects.filter(group_id__in=groups).exists()
    for group in groups:
        status, body = Scim(directory).get(f"/Groups/{group}")
        assert status == 200 and not body.get("members"), body
    # A membership event only for a membership that existed: at most one per (group, user).
    added = Counter((e["data"]["group"]["id"], e["data"]["id"]) for e in _events(directory, "group.user_added"))
    assert all(n == 1 for n in added.values())


def test_two_groups_adding_the_same_users_in_opposite_orders_neither_deadlock_nor_fail(scim_hooked: Scim) -> None:
    directory = scim_hooked.directory
    users = _create_users(directory, "both", 40)
    group_a, group_b = _create_group(directory, "Forward"), _create_group(directory, "Backward")
    forward, backward = users, users[::-1]
    jobs = [
        lambda group=group, order=order: _timed(
            lambda: Scim(directory).patch(f"/Groups/{group}", _members_patch("add", order))
        )
        for group, order in itertools.islice(
            itertools.cycle([(group_a, forward), (group_b, backward), (group_a, backward), (group_b, forward)]), 12
        )
    ]
    answers = _answers(_parallel(jobs))
    assert [a.status for a in answers] == [204] * 12, [a.body for a in answers]
    for group in (group_a, group_b):
        members = {str(u) for u in GroupMembership.objects.filter(group_id=group).values_list("user_id", flat=True)}
        assert members == set(users)
    added = Counter((e["data"]["group"]["id"], e["data"]["id"]) for e in _events(directory, "group.user_added"))
    assert len(added) == 80 and set(added.values()) == {1}  # each membership added, and announced, once


@pytest.fixture
def no_rate_limit(settings) -> None:  # noqa: ANN001
    """Thousands of requests in seconds, far past a directory's burst (contract §4.5): this test is about
    paging under concurrent writes, so the limit is off (its own tests are tests/scim/test_rate_limits.py)."""
    settings.SCIM_RATE_LIMIT = 0


def test_paging_five_thousand_users_while_writes_go_on_neither_skips_nor_repeats_one(
    scim_hooked: Scim, no_rate_limit: None
) -> None:
    from bench.scale import seed_users

    directory = scim_hooked.directory
    existing = [str(u) for u in seed_users(directory, 0, 5000)]
    patched: set[str] = set()
    done = threading.Event()
    seen: list[str] = []
    pages: list[int] = []

    def pager() -> Answer:
        scim, start, total = Scim(directory), 1, None
        try:
            # At most 80 pages: the creators add at the end, and the pager must not chase them forever.
            while (total is None or start <= total) and len(pages) < 80:
                status, body = scim.get(f"/Users?startIndex={start}&count=100")
                assert status == 200, body
                total = body["totalResults"]
                seen.extend(r["id"] for r in body["Resources"])
                pages.append(len(body["Resources"]))
                if not body["Resources"]:
                    break
                start += len(body["Resources"])
        finally:
            done.set()
        return Answer(200, None, 0.0, 0.0)

    def until_paged(write: Callable[[Scim, int], None]) -> Callable[[], Answer]:
        """A writer thread: `write(client, n)` for n = 0, 1, ... until the pager is done."""

        def run() -> Answer:
            scim = Scim(directory)
            for n in itertools.count():
                if done.is_set():
                    break
                write(scim, n)
            return Answer(200, None, 0.0, 0.0)

        return run

    def create(worker: int, scim: Scim, n: int) -> None:
        status, body = scim.post("/Users", user_body(f"new{worker}.{n}@race.example"))
        assert status == 201, body

    def patch(worker: int, scim: Scim, n: int) -> None:
        user = existing[(worker * 997 + n * 131) % len(existing)]
        status, body = scim.ops(f"/Users/{user}", {"op": "replace", "path": "name.givenName", "value": f"W{n}"})
        assert status in (200, 204), body
        patched.add(user)

    writers = [until_paged(functools.partial(w, worker)) for w in (create, patch) for worker in (0, 1)]
    _answers(_parallel([pager, *writers]))
    counts = Counter(seen)
    assert len(pages) >= 50
    unchanged = [u for u in existing if u not in patched]
    assert len(patched) > 0 and len(unchanged) > 4000
    assert [u for u in unchanged if counts[u] != 1] == []  # none skipped, none repeated
    assert [u for u, n in counts.items() if n > 1] == []  # and no user at all shown twice
    assert all(counts[u] == 1 for u in existing)
