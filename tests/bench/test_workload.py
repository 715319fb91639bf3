"""The workload against a small in-memory SCIM server: it passes a correct server and catches a wrong one."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from bench.workload import Workload, WorkloadConfig


class FakeScim:
    """Just enough SCIM for the workload; `flaws` switches on one misbehaviour at a time."""

    def __init__(self, flaws: set[str]) -> None:
        self.flaws = flaws
        self.users: dict[str, dict] = {}
        self.groups: dict[str, list[str]] = {}
        self.lock = threading.Lock()

    def handle(self, method: str, path: str, body: dict | None) -> tuple[int, dict | None]:
        parts = urlsplit(path)
        segments = parts.path.strip("/").split("/")[1:]  # drop the "scim" prefix
        query = parse_qs(parts.query)
        with self.lock:
            if segments == ["Users"] and method == "POST":
                uid = str(uuid.uuid4())
                self.users[uid] = {"id": uid, "userName": body["userName"], "active": True}
                return 201, self.users[uid]
            if segments == ["Groups"] and method == "POST":
                gid = str(uuid.uuid4())
                self.groups[gid] = []
                return 201, {"id": gid}
            if segments[0] == "Groups" and method == "PATCH":
                self.groups[segments[1]].append(body["Operations"][0]["value"][0]["value"])
                return 204, None
            if segments == ["Users"] and "filter" in query:
                wanted = query["filter"][0].split('"')[1]
                found = [u for u in self.users.values() if u["userName"] == wanted]
                return 200, {"totalResults": len(found), "Resources": found}
            if segments == ["Users"]:
                start, count = int(query["startIndex"][0]), int(query["count"][0])
                everyone = list(self.users.values())
                page = everyone[start - 1 : start - 1 + count]
                if "overlapping_pages" in self.flaws and start > 1:
                    page = everyone[start - 2 : start - 2 + count]
                total = len(everyone) + (1 if "wrong_total" in self.flaws else 0)
                return 200, {"totalResults": total, "Resources": page}
            uid = segments[1]
            if method == "PATCH":
                if "ignores_deactivation" not in self.flaws:
                    self.users[uid]["active"] = False
                return 200, self.users[uid]
            if method == "DELETE":
                if "keeps_deleted" not in self.flaws:
                    self.users.pop(uid)
                return 204, None
            if uid in self.users:
                return 200, self.users[uid]
            return 404, {"detail": "not found"}


@pytest.fixture
def fake_scim(request: pytest.FixtureRequest) -> Iterator[tuple[str, FakeScim]]:
    fake = FakeScim(set(getattr(request, "param", ())))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = orjson.loads(self.rfile.read(length)) if length else None
            assert self.headers["Authorization"] == "Bearer scim-secret"
            status, data = fake.handle(self.command, self.path, body)
            payload = orjson.dumps(data) if data is not None else b""
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = _any  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", fake
    server.shutdown()
    server.server_close()


def _run(base_url: str, concurrency: int = 4) -> dict[str, object]:
    config = WorkloadConfig(users=60, groups=4, concurrency=concurrency, page_size=25, list_passes=2)
    workload = Workload(base_url=base_url, scim_path="/scim", scim_secret="scim-secret", config=config)
    try:
        return {r.name: r for r in workload.run()} | {"_workload": workload}
    finally:
        workload.close()


def test_a_correct_server_passes_every_phase(fake_scim: tuple[str, FakeScim]) -> None:
    base_url, fake = fake_scim
    results = _run(base_url)
    workload = results.pop("_workload")
    assert list(results) == [
        "create_users",
        "create_groups",
        "add_members",
        "filter_username",
        "list_users",
        "deactivate",
        "delete",
        "check_404",
    ]
    assert {name: r.errors for name, r in results.items()} == dict.fromkeys(results, 0)
    assert results["create_users"].requests == 60
    assert results["add_members"].requests == 60
    # 60 users in pages of 25: 3 pages plus one past the end, twice.
    assert results["list_users"].requests == 8
    assert results["delete"].requests == 6
    assert sum(len(m) for m in fake.groups.values()) == 60
    assert len(fake.users) == 54
    assert workload.expected_events() == {
        "user.created": 60,
        "group.created": 4,
        "group.user_added": 60,
        "user.updated": 6,
        "user.deleted": 6,
    }


@pytest.mark.parametrize("fake_scim", [("overlapping_pages",)], indirect=True)
def test_list_phase_catches_pages_that_overlap(fake_scim: tuple[str, FakeScim]) -> None:
    results = _run(fake_scim[0])
    assert results["list_users"].errors >= 2  # one per pass
    assert "seen more than once" in " ".join(results["list_users"].error_samples)


@pytest.mark.parametrize("fake_scim", [("wrong_total",)], indirect=True)
def test_list_phase_catches_a_wrong_total(fake_scim: tuple[str, FakeScim]) -> None:
    results = _run(fake_scim[0], concurrency=1)
    assert results["list_users"].errors == 8
    assert "totalResults 61 != 60" in results["list_users"].error_samples[0]


@pytest.mark.parametrize("fake_scim", [("ignores_deactivation", "keeps_deleted")], indirect=True)
def test_deactivation_and_deletion_are_checked(fake_scim: tuple[str, FakeScim]) -> None:
    results = _run(fake_scim[0])
    assert results["deactivate"].errors == 6
    assert results["check_404"].errors == 6
    assert "HTTP 200 (expected 404)" in results["check_404"].error_samples[0]
