"""History at scale (contract §5.3): a snapshot page and a diff of a large directory, through the REST API.

    .venv/bin/python -m bench.history                              # 100,000 users, 500,000 events
    .venv/bin/python -m bench.history --users 20000 --events 100000   # a smaller scale

One directory on a fresh PostgreSQL database (roster_history) gets the history rows that folding its feed
would give (history.models), written in bulk with COPY: `--users` users created, then events up to
`--events` drawn as a feed of that size looks (60 % user updates, 15 % deactivations and reactivations,
20 % membership changes over `--groups` groups, 5 % deletions), numbered 1…N, spread over 30 days.
The feed keeps only its first event (history reads never touch the feed's rows, only its oldest number).
Writing the rows directly keeps seeding to a minute; the fold itself is measured apart: `--fold` real
events appended to the directory's changes feed, then folded by `history_catch_up` (events per second).

Then, in this process through Django's test client (the REST route, envelope and rendering included):
- a users snapshot page (pageLimit=100) at random points, at the first page and at a deep offset
- a groups snapshot page at random points
- a diff across `--window` events (default 10,000) at random points, first page (pageLimit=1000)

p50 and p95 of each, in milliseconds, printed and written to bench/results/history-<time>.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import systems
from bench.stats import percentile

RESULTS = systems.BENCH / "results"
OPEN = 2**62


def log(message: str) -> None:
    print(message, flush=True)


def _user(user_id: uuid.UUID, i: int, created: str, updated: str, active: bool, title: str) -> dict[str, Any]:
    name = f"user{i}@bench.example"
    return {
        "id": str(user_id),
        "first_name": f"First{i}",
        "last_name": f"Last{i}",
        "email": name,
        "active": active,
        "raw": {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "id": str(user_id),
            "userName": name,
            "name": {"givenName": f"First{i}", "familyName": f"Last{i}"},
            "emails": [{"primary": True, "value": name, "type": "work"}],
            "title": title,
            "active": active,
        },
        "created_at": created,
        "updated_at": updated,
    }


class Seeder:
    """The history rows of a directory whose feed had `events` events over `users` users."""

    def __init__(self, directory_id: uuid.UUID, users: int, events: int, groups: int, seed: int) -> None:
        self.directory_id = str(directory_id)
        self.users = users
        self.events = events
        self.groups = groups
        self.rng = random.Random(seed)
        self.start = datetime.now(UTC) - timedelta(days=30)
        self.step = timedelta(days=29) / max(events, 1)
        self.user_rows = io.StringIO()
        self.group_rows = io.StringIO()
        self.span_rows = io.StringIO()
        self.point_rows = io.StringIO()

    def _when(self, seq: int) -> datetime:
        return self.start + self.step * seq

    def _iso(self, seq: int) -> str:
        return self._when(seq).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    @staticmethod
    def _line(target: io.StringIO, *values: Any) -> None:
        target.write("\t".join(str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n") for v in values))
        target.write("\n")

    def run(self) -> dict[str, int]:
        seq = 0
        group_ids = [uuid.uuid4() for _ in range(self.groups)]
        for g, group_id in enumerate(group_ids):
            seq += 1
            data = {
                "id": str(group_id),
                "name": f"Group {g}",
                "raw": {"id": str(group_id), "displayName": f"Group {g}"},
            }
            data |= {"created_at": self._iso(seq), "updated_at": self._iso(seq)}
            self._line(
                self.group_rows,
                self.directory_id,
                group_id,
                seq,
                OPEN,
                self._when(seq).isoformat(),
                seq,
                json.dumps(data),
            )
            self._line(self.point_rows, self.directory_id, seq, self._when(seq).isoformat(), "group.created")
        # Each user's open version: (seq it began, born, created iso, index, active, title)
        open_users: dict[uuid.UUID, list[Any]] = {}
        ids: list[uuid.UUID] = []
        members: dict[tuple[uuid.UUID, uuid.UUID], int] = {}
        groups_of: dict[uuid.UUID, set[uuid.UUID]] = {}
        counts = {"user_versions": 0, "spans": 0}

        def close_user(user_id: uuid.UUID, at: int) -> None:
            began, born, created, i, active, title, updated = open_users.pop(user_id)
            data = _user(user_id, i, created, updated, active, title)
            self._line(self.user_rows, self.directory_id, user_id, began, at, created, born, json.dumps(data))
            counts["user_versions"] += 1

        for i in range(self.users):
            seq += 1
            user_id = uuid.uuid4()
            ids.append(user_id)
            open_users[user_id] = [seq, seq, self._iso(seq), i, True, "Engineer", self._iso(seq)]
            self._line(self.point_rows, self.directory_id, seq, self._when(seq).isoformat(), "user.created")
        while seq < self.events:
            seq += 1
            roll = self.rng.random()
            kind = "user.updated"
            if roll < 0.20 and ids:
                user_id, group_id = self.rng.choice(ids), self.rng.choice(group_ids)
                if user_id in open_users:
                    key = (group_id, user_id)
                    if key in members:
                        self._line(self.span_rows, self.directory_id, group_id, user_id, members.pop(key), seq)
                        groups_of[user_id].discard(group_id)
                        kind = "group.user_removed"
                    else:
                        members[key] = seq
                        groups_of.setdefault(user_id, set()).add(group_id)
                        kind = "group.user_added"
                    counts["spans"] += 1
            elif roll < 0.25 and len(ids) > 1:
                user_id = ids.pop(self.rng.randrange(len(ids)))
                close_user(user_id, seq)
                for group_id in groups_of.pop(user_id, set()):
                    began = members.pop((group_id, user_id))
                    self._line(self.span_rows, self.directory_id, group_id, user_id, began, seq)
                kind = "user.deleted"
            else:
                user_id = self.rng.choice(ids)
                began, born, created, i, active, title, _updated = open_users[user_id]
                close_user(user_id, seq)
                if roll < 0.40:
                    active = not active
                else:
                    title = f"Title {self.rng.randrange(1000)}"
                open_users[user_id] = [seq, born, created, i, active, title, self._iso(seq)]
            self._line(self.point_rows, self.directory_id, seq, self._when(seq).isoformat(), kind)
        for user_id, (began, born, created, i, active, title, updated) in list(open_users.items()):
            data = _user(user_id, i, created, updated, active, title)
            self._line(self.user_rows, self.directory_id, user_id, began, OPEN, created, born, json.dumps(data))
            counts["user_versions"] += 1
        for (group_id, user_id), began in members.items():
            self._line(self.span_rows, self.directory_id, group_id, user_id, began, OPEN)
        self.last = seq
        return counts

    def write(self) -> None:
        from django.db import connection

        tables = [
            (
                "history_userversion",
                "directory_id, user_id, valid_from, valid_to, created_at, born, data",
                self.user_rows,
            ),
            (
                "history_groupversion",
                "directory_id, group_id, valid_from, valid_to, created_at, born, data",
                self.group_rows,
            ),
            ("history_membershipspan", "directory_id, group_id, user_id, valid_from, valid_to", self.span_rows),
            ("history_historypoint", "directory_id, sequence, created_at, event_type", self.point_rows),
        ]
        with connection.cursor() as cursor:
            for table, columns, rows in tables:
                with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    copy.write(rows.getvalue())
            cursor.execute("ANALYZE")


def _timed(client: Any, path: str) -> float:
    t0 = time.perf_counter()
    response = client.get(path)
    elapsed = (time.perf_counter() - t0) * 1000
    assert response.status_code == 200, (path, response.content[:300])
    return elapsed


def _summary(name: str, samples: list[float]) -> dict[str, float]:
    out = {"p50_ms": round(percentile(samples, 50), 1), "p95_ms": round(percentile(samples, 95), 1), "n": len(samples)}
    log(f"{name}: p50 {out['p50_ms']} ms, p95 {out['p95_ms']} ms ({len(samples)} reads)")
    return out


def _fold(directory: Any, count: int, users: list[str]) -> dict[str, float]:
    """Append `count` real events (user updates of existing users) to the feed, then fold them."""
    from directories.models import Directory
    from history.models import HistoryState
    from history.services import history_catch_up
    from webhooks.models import EventSequence, EventState, WebhookEvent

    directory = Directory.objects.get(pk=directory.pk)
    first = HistoryState.objects.get(pk=directory.pk).folded_sequence
    EventSequence.objects.update_or_create(directory_id=directory.id, defaults={"last": first})
    now = datetime.now(UTC)
    rows = []
    for n in range(count):
        seq = first + 1 + n
        user_id = users[n % len(users)]
        data = _user(uuid.UUID(user_id), n, "2026-01-01T00:00:00.000Z", now.isoformat(), n % 2 == 0, f"Fold {n}")
        body = {"id": str(uuid.uuid4()), "event": "user.updated", "created_at": now.isoformat(), "sequence": seq}
        body |= {
            "directory_id": str(directory.id),
            "tenant": directory.tenant,
            "product": directory.product,
            "data": data,
        }
        rows.append(
            WebhookEvent(
                directory_id=directory.id,
                event_type="user.updated",
                body=json.dumps(body),
                sequence=seq,
                state=EventState.DROPPED,
                created_at=now + timedelta(microseconds=n),
            )
        )
    WebhookEvent.objects.bulk_create(rows, batch_size=2000)
    EventSequence.objects.filter(directory_id=directory.id).update(last=first + count)
    t0 = time.perf_counter()
    folded = history_catch_up(directory=directory)
    seconds = time.perf_counter() - t0
    assert folded == count, folded
    out = {"events": count, "seconds": round(seconds, 2), "events_per_second": round(count / seconds)}
    log(f"fold: {count} events in {out['seconds']} s ({out['events_per_second']} events/s)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--window", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--fold", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--database", default="roster_history")
    parser.add_argument("--redis-db", type=int, default=13)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    systems.roster_in_process(database=args.database, redis_db=args.redis_db, metrics_prefix="roster-history-metrics-")
    from django.test import Client

    from audit.actors import Actor
    from directories.services import directory_create
    from history.models import HistoryState, UserVersion

    directory = directory_create(
        actor=Actor(name="bench", via="command"), data={"tenant": "bench", "product": "history"}
    )
    t0 = time.perf_counter()
    seeder = Seeder(directory.id, args.users, args.events, args.groups, args.seed)
    counts = seeder.run()
    seeder.write()
    HistoryState.objects.create(directory=directory, folded_sequence=seeder.last)
    from webhooks.models import EventSequence

    EventSequence.objects.create(directory_id=directory.id, last=seeder.last)
    # History answers from the oldest event the feed keeps (history.services.history_cut). The feed's own rows
    # are not what a history read touches, so its first event stands for all of them.
    from webhooks.models import EventState, WebhookEvent

    WebhookEvent.objects.create(
        directory_id=directory.id, event_type="group.created", body="{}", sequence=1, state=EventState.DROPPED
    )
    log(
        f"seeded {args.users} users, {seeder.last} events: {counts['user_versions']} user versions, "
        f"{counts['spans']} membership changes in {time.perf_counter() - t0:.0f} s"
    )
    api_key = os.environ.get("API_KEYS", "bench-key").split(",")[0]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    base = f"/api/v1/directory-sync/{directory.id}"
    rng = random.Random(args.seed)
    lowest = args.groups + args.users  # every user exists from here on
    points = [rng.randint(lowest, seeder.last) for _ in range(args.reads)]
    for warm in points[:3]:
        _timed(client, f"{base}/history/users?sequence={warm}")
    results: dict[str, Any] = {"users": args.users, "events": seeder.last, "rows": counts}
    results["users_first_page"] = _summary(
        "users snapshot, first page",
        [_timed(client, f"{base}/history/users?sequence={p}&pageLimit=100") for p in points],
    )
    deep = max(args.users // 2, 0)
    results["users_deep_page"] = _summary(
        f"users snapshot, page at offset {deep}",
        [_timed(client, f"{base}/history/users?sequence={p}&pageOffset={deep}&pageLimit=100") for p in points],
    )
    results["groups_page"] = _summary(
        "groups snapshot", [_timed(client, f"{base}/history/groups?sequence={p}") for p in points]
    )
    starts = [rng.randint(1, seeder.last - args.window) for _ in range(args.reads)]
    results["diff"] = _summary(
        f"diff across {args.window} events",
        [_timed(client, f"{base}/diff?from={s}&to={s + args.window}&pageLimit=1000") for s in starts],
    )
    user_ids = [
        str(u)
        for u in UserVersion.objects.filter(directory=directory, valid_to=OPEN).values_list("user_id", flat=True)[:1000]
    ]
    results["fold"] = _fold(directory, args.fold, user_ids)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"history-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(results, indent=2))
    log(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
