"""Receivers that fail: 500, hanging past WEBHOOK_TIMEOUT, 302, refusing connections, a 100 MB body."""

from __future__ import annotations

import collections
import threading
import time

import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import (
    WEBHOOK_TIMEOUT,
    received_ids,
    receiver_running,
    scim_create_users,
    unused_port,
)

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

EVENTS = 3  # per faulty directory
# (receiver path, expected error class of each attempt, expected status code); "" = delivered
FAULTS = {
    "fail": ("/fail", "HTTPStatus", 500),
    "hang": ("/slow", "Timeout", None),
    "redirect": ("/redirect", "Redirect", 302),
    "refused": (None, "ConnectionRefused", None),
    "huge": ("/huge", "", 200),
}


def test_receiver_faults(stack: Stack) -> None:
    roster = stack.roster
    # The hanging receiver answers after 30 s, far past the 2 s WEBHOOK_TIMEOUT.
    with receiver_running(slow_seconds=30) as receiver:
        directories = {}
        for name, (path, _cls, _status) in FAULTS.items():
            url = receiver.url(path) if path else f"http://127.0.0.1:{unused_port()}/hook"
            directories[name] = roster.directory_create(f"rx-{name}", url)
        healthy_id, healthy_secret = roster.directory_create("rx-healthy", receiver.url("/ok"))

        rss_before = roster.worker_rss_kib()
        rss_peak = rss_before
        sampling = threading.Event()

        def sample() -> None:
            nonlocal rss_peak
            while not sampling.is_set():
                rss_peak = max(rss_peak, roster.worker_rss_kib())
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        for name, (directory_id, secret) in directories.items():
            scim_create_users(roster, directory_id, secret, EVENTS, f"rx-{name}")
        # The healthy directory's events are committed while the hanging one's drain is stuck on it.
        time.sleep(0.5)
        healthy_committed = time.monotonic()
        scim_create_users(roster, healthy_id, healthy_secret, EVENTS, "rx-healthy")
        all_ids = [d for d, _s in directories.values()] + [healthy_id]
        settled = roster.settle(all_ids, timeout=90)
        sampling.set()
        sampler.join(5)
        elapsed = time.monotonic() - started

        with receiver.lock:
            arrivals = [(r.path, r.at) for r in receiver.requests]
        hang_last = max(at for path, at in arrivals if path.startswith("/slow"))
        healthy_arrivals = [at for path, at in arrivals if path == "/ok"]
        print(f"\nreceiver faults ({EVENTS} events each, WEBHOOK_TIMEOUT {WEBHOOK_TIMEOUT:g} s), {elapsed:.1f} s:")
        for name, (directory_id, _secret) in directories.items():
            outcome = collections.Counter((d[2] or "delivered", d[3]) for d in roster.deliveries(directory_id))
            print(f"  {name}: {dict(outcome)}, {len(received_ids(receiver, directory_id))} requests received")
        print(
            f"  healthy directory: {len(healthy_arrivals)} delivered, the last "
            f"{max(healthy_arrivals, default=0) - healthy_committed:.1f} s after commit; the hanging receiver's "
            f"last attempt started {hang_last - healthy_committed:.1f} s after it"
        )
        print(f"  worker RSS {rss_before // 1024} MiB before, {rss_peak // 1024} MiB at most during")
        assert settled, {d: roster.events_open(d) for d in all_ids}

        for name, (directory_id, _secret) in directories.items():
            _path, error_class, status = FAULTS[name]
            deliveries = roster.deliveries(directory_id)
            # Each event attempted exactly once, with the right outcome.
            assert len(deliveries) == EVENTS and len({d[0] for d in deliveries}) == EVENTS, (name, deliveries)
            for _event_id, delivered, cls, code in deliveries:
                assert delivered is (error_class == ""), (name, cls)
                assert cls == error_class and code == status, (name, cls, code)
            if name != "refused":
                received = received_ids(receiver, directory_id)
                assert sorted(received) == sorted(d[0] for d in deliveries), name
        healthy = roster.deliveries(healthy_id)
        assert len(healthy) == EVENTS and all(d[1] for d in healthy)
        # Another directory's deliveries flow while the hanging receiver holds its own drain.
        assert max(healthy_arrivals) < hang_last, "the healthy directory waited for the hanging receiver"
        # The 100 MB answer was not read into memory.
        assert rss_peak - rss_before < 32 * 1024, (rss_before, rss_peak)
        # Never stuck past the timeout: every hanging attempt ended as a timeout (above), and the worker
        # still delivers afterwards.
        assert roster.worker is not None and roster.worker.alive()
