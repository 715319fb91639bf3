"""Does Roster stay flat as a directory grows? Latency at 1k, 10k and 100k users, side by side.

    .venv/bin/python -m bench.scale                      # sizes 1000,10000,100000; group of 10,000
    .venv/bin/python -m bench.scale --sizes 1000,10000 --repeats 50

One directory on a fresh PostgreSQL database (roster_scale) is grown step by step with bulk inserts
through the models (the same columns SCIM writes: scim.protocol.documents.user_finalize when present), plus
`--spares` users that are in no group. At each size, Roster runs in production shape (`python -m
server.web`, DEBUG off) and one client measures p50/p95 of:

- a SCIM list page (count=100) at the start and at the end of the directory
- `userName eq` and `externalId eq` filters on random users
- PATCH add of one member to the big group (each a spare user; removed again afterwards)
- GET of the big group, with and without `excludedAttributes=members`
- the REST read API's last page (/api/v1/directory-sync/users?...&pageOffset=<last>&pageLimit=100)
- an enterprise-extension `employeeNumber eq` filter, a `sortBy=name.familyName` first page, and the
  REST user list filtered by the big group (`group=<id>`, first page)

and, in this process through Django's test client, how many SQL queries each operation makes and
how long PostgreSQL took for them. The directory has no webhook: webhook cost is per event, not per
directory size, and is measured by bench.compare.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench import systems
from bench.httpclient import Client
from bench.procs import Service, recreate_database, wait_http
from bench.stats import percentile
from bench.workload import GROUP_SCHEMA, PATCH_SCHEMA, okta_user

RESULTS = systems.BENCH / "results"
TAG = "scale"


def log(message: str) -> None:
    print(message, flush=True)


# -- seeding -------------------------------------------------------------------------------------------


ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"


def _user_row(i: int, fields: set[str]) -> dict[str, Any]:
    from core.comparison import comparison_key

    uid = uuid.uuid4()
    doc = okta_user(TAG, i)
    # What Entra sends of the enterprise extension, for the extension filter: unique numbers, 50 departments.
    doc[ENTERPRISE] = {"employeeNumber": f"E{i:08d}", "department": f"Dept{i % 50}"}
    doc["schemas"] = [*doc["schemas"], ENTERPRISE]
    try:
        from scim.protocol.documents import user_finalize
    except ImportError:  # SCIM not landed: derive the columns the way contract §3 describes them
        raw = {**doc, "id": str(uid)}
        cols = {
            "user_name": doc["userName"],
            "user_name_key": comparison_key(doc["userName"]),
            "external_id": doc["externalId"],
            "first_name": doc["name"]["givenName"],
            "last_name": doc["name"]["familyName"],
            "email": doc["emails"][0]["value"],
            "active": True,
        }
    else:
        raw, columns = user_finalize(doc, uid)
        cols = columns.as_dict() if hasattr(columns, "as_dict") else dict(columns.__dict__)
    return {"id": uid, "raw": raw, **{k: v for k, v in cols.items() if k in fields}}


def seed_users(directory: Any, start: int, stop: int, batch: int = 2000) -> list[uuid.UUID]:
    from directories.models import DirectoryUser

    fields = {f.name for f in DirectoryUser._meta.get_fields()}
    ids: list[uuid.UUID] = []
    rows: list[DirectoryUser] = []
    for i in range(start, stop):
        row = _user_row(i, fields)
        ids.append(row["id"])
        rows.append(DirectoryUser(directory=directory, **row))
        if len(rows) >= batch:
            DirectoryUser.objects.bulk_create(rows)
            rows = []
    if rows:
        DirectoryUser.objects.bulk_create(rows)
    return ids


def seed_group(directory: Any, name: str) -> Any:
    from core.comparison import comparison_key
    from directories.models import DirectoryGroup

    gid = uuid.uuid4()
    doc = {"schemas": [GROUP_SCHEMA], "displayName": name}
    try:
        from scim.protocol.documents import group_finalize
    except ImportError:
        raw = {**doc, "id": str(gid)}
        cols = {"display_name": name, "display_name_key": comparison_key(name)}
    else:
        raw, cols = group_finalize(doc, gid)
    return DirectoryGroup.objects.create(id=gid, directory=directory, raw=raw, **cols)


def seed_members(group: Any, user_ids: list[uuid.UUID], batch: int = 5000) -> None:
    from directories.models import GroupMembership

    for k in range(0, len(user_ids), batch):
        GroupMembership.objects.bulk_create(
            [GroupMembership(group=group, user_id=u) for u in user_ids[k : k + batch]], ignore_conflicts=True
        )


# -- measuring -----------------------------------------------------------------------------------------


class Scenario:
    def __init__(self, *, base_url: str, directory: Any, group: Any, members: int, total: int) -> None:
        self.scim = f"/api/scim/v2.0/{directory.id}"
        self.secret = directory.scim_secret
        self.tenant = directory.tenant
        self.product = directory.product
        self.group_id = str(group.id)
        self.members = members
        self.total = total
        self.base_url = base_url

    def _filter(self, attribute: str, value: str) -> str:
        return f"{self.scim}/Users?filter=" + quote(f'{attribute} eq "{value}"', safe="")

    def operations(
        self, users: list[tuple[str, str, str, str]], spares: list[str]
    ) -> dict[str, list[tuple[str, str, Any]]]:
        """name -> list of (method, path, body) to send, one per repeat; `users` is (id, userName,
        externalId, employeeNumber)."""
        last = max(1, self.total - 99)
        rest_last = max(0, self.total - 100)
        add = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "add", "path": "members", "value": None}]}
        return {
            "list_first_page": [("GET", f"{self.scim}/Users?startIndex=1&count=100", None)],
            "list_last_page": [("GET", f"{self.scim}/Users?startIndex={last}&count=100", None)],
            "filter_userName": [("GET", self._filter("userName", u[1]), None) for u in users],
            "filter_externalId": [("GET", self._filter("externalId", u[2]), None) for u in users],
            "patch_add_member": [
                (
                    "PATCH",
                    f"{self.scim}/Groups/{self.group_id}",
                    {**add, "Operations": [{"op": "add", "path": "members", "value": [{"value": s}]}]},
                )
                for s in spares
            ],
            "get_group_no_members": [("GET", f"{self.scim}/Groups/{self.group_id}?excludedAttributes=members", None)],
            "get_group_with_members": [("GET", f"{self.scim}/Groups/{self.group_id}", None)],
            "rest_last_page": [
                (
                    "GET",
                    f"/api/v1/directory-sync/users?tenant={quote(self.tenant)}&product={quote(self.product)}"
                    f"&pageOffset={rest_last}&pageLimit=100",
                    None,
                )
            ],
            "filter_enterprise_eq": [("GET", self._filter(f"{ENTERPRISE}:employeeNumber", u[3]), None) for u in users],
            "sort_family_name_page": [
                ("GET", f"{self.scim}/Users?sortBy=name.familyName&startIndex=1&count=100", None)
            ],
            "rest_users_by_group": [
                (
                    "GET",
                    f"/api/v1/directory-sync/users?tenant={quote(self.tenant)}&product={quote(self.product)}"
                    f"&group={self.group_id}&pageLimit=100",
                    None,
                )
            ],
        }


EXPECTED = {"patch_add_member": (200, 204)}
REPEAT_LIMIT = {"get_group_with_members": 20}


def measure(
    scenario: Scenario, ops: dict[str, list[tuple[str, str, Any]]], repeats: int, api_key: str
) -> dict[str, Any]:
    scim = Client(scenario.base_url, token=scenario.secret)
    rest = Client(scenario.base_url, token=api_key)
    out: dict[str, Any] = {}
    for name, requests in ops.items():
        n = min(repeats, REPEAT_LIMIT.get(name, repeats))
        if name == "patch_add_member":
            n = len(requests)  # one spare each: every add really adds
        client = rest if name.startswith("rest_") else scim
        for method, path, body in requests[:3] if name != "patch_add_member" else []:
            client.request(method, path, body)  # warm-up: connection, caches, worker imports
        latencies: list[float] = []
        errors: list[str] = []
        size = 0
        for k in range(n):
            method, path, body = requests[k % len(requests)]
            resp = client.request(method, path, body)
            latencies.append(resp.seconds)
            size = len(resp.body)
            if resp.status not in EXPECTED.get(name, (200,)):
                errors.append(f"HTTP {resp.status}: {resp.body[:150]!r}")
        out[name] = {
            "n": n,
            "p50_ms": round(percentile(latencies, 50) * 1000, 2),
            "p95_ms": round(percentile(latencies, 95) * 1000, 2),
            "bytes": size,
            "errors": len(errors),
            "error_sample": errors[:1],
        }
    scim.close()
    rest.close()
    return out


def count_queries(ops: dict[str, list[tuple[str, str, Any]]], secret: str, api_key: str) -> dict[str, Any]:
    """Queries and PostgreSQL time of each operation, run once in this process (django.test.Client)."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    out: dict[str, Any] = {}
    for name, requests in ops.items():
        method, path, body = requests[-1]
        token = api_key if name.startswith("rest_") else secret
        client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token}")
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/scim+json"}
        with CaptureQueriesContext(connection) as ctx:
            resp = getattr(client, method.lower())(path, **kwargs)
        out[name] = {
            "status": resp.status_code,
            "queries": len(ctx.captured_queries),
            "sql_ms": round(sum(float(q["time"]) for q in ctx.captured_queries) * 1000, 2),
            "statements": [q["sql"][:160] for q in ctx.captured_queries],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--members", type=int, default=10000, help="members of the big group (capped by size)")
    parser.add_argument("--spares", type=int, default=100, help="users in no group, added by the PATCH test")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--port", type=int, default=8124)
    parser.add_argument("--database", default="roster_scale")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    # `timeout` and CI send SIGTERM: turn it into SystemExit so the finally blocks stop every server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = sorted(int(s) for s in args.sizes.split(","))
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"logs-scale-{stamp}"
    out_path = args.out or RESULTS / f"scale-{stamp}.json"
    RESULTS.mkdir(parents=True, exist_ok=True)

    opts = systems.RosterOptions(port=args.port, database=args.database)
    env = systems.roster_env(opts)
    recreate_database(args.database)
    os.environ.update(env)
    sys.path.insert(0, str(systems.ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from directories.models import GroupMembership
    from directories.services import directory_create

    data = {"tenant": "scale", "product": "bench", "type": "okta-scim-v2"}
    directory = directory_create(data=data, **systems.service_actor(directory_create))
    group = seed_group(directory, "Everyone big")
    t0 = time.perf_counter()
    spares = seed_users(directory, 10_000_000, 10_000_000 + args.spares)
    log(f"seeded {len(spares)} spare users in {time.perf_counter() - t0:.1f}s")

    argv = systems.web_command(systems.RosterOptions(port=args.port))
    web = Service("roster-web", argv, env=env, cwd=systems.ROOT, log=logs / "web.log")
    results: dict[str, Any] = {}
    all_users: list[uuid.UUID] = []
    rng = random.Random(7)  # noqa: S311 - sampling, not security
    try:
        wait_http("127.0.0.1", args.port, "/healthz", timeout=60, proc=web)
        for size in sizes:
            t0 = time.perf_counter()
            all_users += seed_users(directory, len(all_users), size)
            want = min(args.members, size)
            current = GroupMembership.objects.filter(group=group).count()
            seed_members(group, all_users[current:want])
            # Autovacuum would analyze the tables after a change this size; without fresh statistics
            # the planner guesses ~100 rows and sorts the whole directory on disk (seen at 100k).
            from django.db import connection

            with connection.cursor() as cursor:
                for table in ("directories_directoryuser", "directories_groupmembership", "directories_directorygroup"):
                    cursor.execute(f"VACUUM ANALYZE {table}")  # noqa: S608 - fixed table names
            seeded = time.perf_counter() - t0
            total = size + len(spares)
            log(f"size {size}: {total} users, {want} members (seeded in {seeded:.1f}s); measuring...")
            from directories.models import DirectoryUser

            sample_ids = rng.sample(all_users, min(len(all_users), args.repeats))
            sample = DirectoryUser.objects.filter(id__in=sample_ids).values_list(
                "id", "user_name", "external_id", "raw"
            )
            users = [(str(i), n, e, raw[ENTERPRISE]["employeeNumber"]) for i, n, e, raw in sample]
            scenario = Scenario(
                base_url=f"http://127.0.0.1:{args.port}", directory=directory, group=group, members=want, total=total
            )
            ops = scenario.operations(users, [str(s) for s in spares])
            # Query counts first (uses one spare), then remove that membership so the HTTP run adds all.
            queries = count_queries(ops, directory.scim_secret, "bench-key")
            GroupMembership.objects.filter(group=group, user_id__in=spares).delete()
            timings = measure(scenario, ops, args.repeats, "bench-key")
            GroupMembership.objects.filter(group=group, user_id__in=spares).delete()
            results[str(size)] = {"users": total, "members": want, "seed_seconds": round(seeded, 1)}
            for name in ops:
                results[str(size)][name] = {**timings[name], **queries[name]}
                t = timings[name]
                q = queries[name]
                err = f"  ERR {t['error_sample']}" if t["errors"] else ""
                log(
                    f"  {name:<24} p50 {t['p50_ms']:7.2f} p95 {t['p95_ms']:7.2f} ms  {q['queries']} queries "
                    f"{q['sql_ms']:.2f} ms SQL  {t['bytes']} bytes{err}"
                )
    finally:
        web.stop()

    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.scale " + " ".join(argv if argv is not None else sys.argv[1:]),
        "results": results,
    }
    out_path.write_text(json.dumps(report, indent=2))
    print()
    print(scale_table(results))
    print(f"\nresults: {out_path}")
    return 0


def scale_table(results: dict[str, Any]) -> str:
    sizes = list(results)
    head = " | ".join(f"{int(s):,} users: p50 / p95 ms (queries)" for s in sizes)
    lines = [f"| operation | {head} |", "|---|" + "---:|" * len(sizes)]
    names = [k for k in results[sizes[0]] if isinstance(results[sizes[0]][k], dict)]
    for name in names:
        cells = []
        for s in sizes:
            r = results[s][name]
            err = f" **{r['errors']} errors**" if r["errors"] else ""
            cells.append(f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f} ({r['queries']}){err}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    members = " | ".join(f"{results[s]['members']:,} members, {results[s]['users']:,} rows" for s in sizes)
    lines.append(f"| (big group / directory) | {members} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
