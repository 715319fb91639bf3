"""The webhook receiver, as a real local server: counts, validates, and reports per run."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import orjson
import pytest

from bench.receiver import Receiver, Server, make_handler
from bench.signatures import sign


@pytest.fixture
def receiver_port() -> Iterator[int]:
    server = Server(("127.0.0.1", 0), make_handler(Receiver("hook-secret")))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _post(port: int, path: str, body: bytes, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
    status = conn.getresponse().status
    conn.close()
    return status


def _stats(port: int, key: str) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", f"/stats/{key}")
    data = orjson.loads(conn.getresponse().read())
    conn.close()
    return data


def test_receiver_counts_valid_invalid_and_duplicate_deliveries(receiver_port: int) -> None:
    event = orjson.dumps({"id": "e1", "event": "user.created", "data": {}})
    good = sign(scheme="roster", secret="hook-secret", body=event)
    assert _post(receiver_port, "/roster/run1", event, {"Roster-Signature": good}) == 200
    assert _post(receiver_port, "/roster/run1", event, {"Roster-Signature": good}) == 200  # same id again
    bad = sign(scheme="roster", secret="other", body=event)
    _post(receiver_port, "/roster/run1", orjson.dumps({"id": "e2", "event": "user.deleted"}), {"Roster-Signature": bad})
    _post(receiver_port, "/roster/run1", event, {})  # unsigned

    stats = _stats(receiver_port, "roster/run1")
    assert stats["received"] == 4
    assert stats["valid"] == 2
    assert stats["invalid"] == 2
    assert stats["invalid_reasons"] == {"signature mismatch": 1, "missing signature header": 1}
    assert stats["by_type"] == {"user.created": 3, "user.deleted": 1}
    assert stats["duplicates"] == 2
    assert stats["last_at"] >= stats["first_at"] > 0
    # Runs are counted apart, so a late delivery of one run never counts for the next.
    assert _stats(receiver_port, "roster/run2")["received"] == 0


def test_receiver_checks_jackson_header_and_batched_events(receiver_port: int) -> None:
    body = orjson.dumps([{"event": "group.created"}, {"event": "group.user_added"}])
    header = sign(scheme="jackson", secret="hook-secret", body=body)
    assert _post(receiver_port, "/jackson/r", body, {"BoxyHQ-Signature": header}) == 200
    # A Roster-style header on the Jackson route is not accepted.
    _post(receiver_port, "/jackson/r", body, {"Roster-Signature": header})
    stats = _stats(receiver_port, "jackson/r")
    assert stats["valid"] == 2
    assert stats["invalid"] == 2
    assert stats["by_type"] == {"group.created": 2, "group.user_added": 2}


def test_receiver_refuses_unknown_routes(receiver_port: int) -> None:
    assert _post(receiver_port, "/nobody/x", b"{}", {}) == 404
