"""CPU cost of the client swaps, before and after, in one run: the webhook sender (hand-written
`http.client` sender + watchdog -> pycurl -> the standard-library sender with deadline sockets) and the
drain flag (hand-written RESP2 client -> redis-py).

    .venv/bin/python -m bench.clients                       # 1000 POSTs and 1000 kicks per variant and round
    .venv/bin/python -m bench.clients --posts 500 --kicks 500 --rounds 3

The former clients are not kept in the application: they are read from git history (the parent of the
commit that deleted webhooks/deadline.py, or --old-ref; and the newest commit whose sender imported
pycurl, measured when pycurl is installed, as requirements-dev.txt has it) into temporary modules of this
process.

- POST: `transport.post` of a small signed-looking JSON body to a keep-alive receiver on 127.0.0.1
  (a separate process, so its CPU does not count), back to back and with a 9 ms pause after each POST
  (a drain of a steady stream sends them like that: caches and branch predictors cool in between).
- kick: `DrainFlag.claim_or_wake` on the local Redis (db --redis-db, default 10), on a fresh key each
  time after the first (the path a SCIM write takes when no drain is running), back to back and paused.

Reported: process CPU per operation (time.process_time of this process, all threads, so the old
sender's watchdog thread counts; waiting for the receiver or Redis does not), the least of the rounds
(variants alternate within a round), and the ratios of the current clients to the former ones. On a
machine shared with other work the ratios are what to read; absolute figures move with the load.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
import types
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAUSE = 0.009
BODY = b'{"id":"3f0c","type":"user.created","data":{"id":"u-1","userName":"ada@example.com","active":true}}'
HEADERS = {
    "Content-Type": "application/json",
    "Roster-Event": "user.created",
    "Roster-Event-Id": "3f0c9a52-8d1e-4b7a-9a53-0f6e2c1d7b44",
    "Roster-Signature": "t=1700000000,v1=" + "ab" * 32,
}


# --- a minimal keep-alive receiver, in its own process ----------------------------------------------


def serve(port_file: str) -> None:
    """Answers every request on a connection with an empty 200, keeping the connection open."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    Path(port_file).write_text(str(listener.getsockname()[1]))

    def handle(conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with conn:
            while True:
                length = 0
                while True:
                    line = reader.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                reader.read(length)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def start_receiver() -> tuple[subprocess.Popen[bytes], int]:
    port_file = ROOT / "bench" / f".clients-port-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-m", "bench.clients", "--serve", str(port_file)], cwd=ROOT)
    deadline = time.monotonic() + 10
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit("the receiver did not start")
        time.sleep(0.05)
    port = int(port_file.read_text())
    port_file.unlink()
    return proc, port


# --- the former clients, from git history ------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def old_ref(given: str | None) -> str:
    if given:
        return given
    deleting = git("rev-list", "-1", "HEAD", "--", "webhooks/deadline.py").strip()
    if not deleting:
        raise SystemExit("webhooks/deadline.py is not in this branch's history: pass --old-ref")
    return f"{deleting}^"


def libcurl_ref() -> str | None:
    """The newest commit whose webhook sender ran on pycurl, when pycurl is installed (requirements-dev)."""
    try:
        import pycurl  # noqa: F401
    except ImportError:
        return None
    for commit in git("log", "--format=%H", "HEAD", "--", "webhooks/transport.py").split():
        if "\nimport pycurl\n" in git("show", f"{commit}:webhooks/transport.py"):
            return commit
    return None


def load_old(ref: str, path: str, name: str, replace: dict[str, str] | None = None) -> types.ModuleType:
    source = git("show", f"{ref}:{path}")
    for old, new in (replace or {}).items():
        source = source.replace(old, new)
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"{ref}:{path}", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


# --- measuring ---------------------------------------------------------------------------------------


def cpu_per_op(op: Callable[[], object], count: int, pause: float) -> float:
    """CPU milliseconds per call of `op`, `pause` seconds of sleep after each (sleeping costs no CPU)."""
    for _ in range(20):
        op()  # warm: connections open, scripts loaded
    started = time.process_time()
    for _ in range(count):
        op()
        if pause:
            time.sleep(pause)
    return (time.process_time() - started) * 1000 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=1000)
    parser.add_argument("--kicks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--redis-db", type=int, default=10)
    parser.add_argument("--old-ref", help="git revision holding the former clients")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    from django.conf import settings

    settings.configure(WEBHOOK_ALLOW_PRIVATE_NETWORKS=True)

    from webhooks import drainflag as new_drainflag
    from webhooks import transport as new_transport

    ref = old_ref(args.old_ref)
    senders = {"old": None, "libcurl": None, "new": new_transport}
    libcurl = libcurl_ref()
    if libcurl is not None:
        senders["libcurl"] = load_old(libcurl, "webhooks/transport.py", "_bench_libcurl_transport")
    load_old(ref, "webhooks/deadline.py", "_bench_old_deadline")
    old_transport = load_old(
        ref,
        "webhooks/transport.py",
        "_bench_old_transport",
        # webhooks.urlcheck is core.outbound since the layout moved it (same names).
        {"from webhooks.deadline import": "from _bench_old_deadline import", "webhooks.urlcheck": "core.outbound"},
    )
    old_coalescer = load_old(ref, "webhooks/coalescer.py", "_bench_old_coalescer")  # its name at that commit
    senders["old"] = old_transport
    posters = {name: module for name, module in senders.items() if module is not None}

    receiver, port = start_receiver()
    url = f"http://127.0.0.1:{port}/hook"
    redis_url = f"redis://127.0.0.1:6379/{args.redis_db}"
    flags = {"old": old_coalescer.Coalescer(redis_url), "new": new_drainflag.DrainFlag(redis_url)}
    directory = f"bench-{uuid.uuid4()}"
    try:
        for name, module in posters.items():
            result = module.post(url, BODY, HEADERS, 5.0)
            assert result.delivered, (name, result)

        def poster(module: types.ModuleType) -> Callable[[], object]:
            return lambda: module.post(url, BODY, HEADERS, 5.0)

        def kicker(flag: object) -> Callable[[], object]:
            # A fresh key each time: the flag is free, so the kick sets it (the path with no drain).
            return lambda: flag.claim_or_wake(directory, str(uuid.uuid4()), 5)  # type: ignore[attr-defined]

        cases = [
            ("webhook POST, back to back", poster, posters, args.posts, 0.0),
            ("webhook POST, 9 ms pauses", poster, posters, args.posts, PAUSE),
            ("kick (claim_or_wake), back to back", kicker, flags, args.kicks, 0.0),
            ("kick (claim_or_wake), 9 ms pauses", kicker, flags, args.kicks, PAUSE),
        ]
        best: dict[tuple[str, str], float] = {}
        for round_number in range(args.rounds):
            for label, make, subjects, count, pause in cases:
                order = list(subjects) if round_number % 2 == 0 else list(reversed(subjects))
                for variant in order:
                    ms = cpu_per_op(make(subjects[variant]), count, pause)
                    key = (label, variant)
                    best[key] = min(best.get(key, ms), ms)
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        receiver.kill()
        receiver.wait()
        # The kicks' flags expire by themselves (5 s); nothing else was written.

    print(f"\nold = {ref} (hand-written clients), libcurl = {libcurl or 'not measured'} (pycurl sender),")
    print("new = this tree (standard-library sender, redis-py)")
    print(f"CPU ms per operation, least of {args.rounds} rounds\n")
    print("| operation | old | libcurl | new | new/old | new/libcurl |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, *_rest in cases:
        old_ms, new_ms = best[(label, "old")], best[(label, "new")]
        curl_ms = best.get((label, "libcurl"))
        curl = f"{curl_ms:.3f}" if curl_ms else "—"
        versus = f"{new_ms / curl_ms:.2f}" if curl_ms else "—"
        print(f"| {label} | {old_ms:.3f} | {curl} | {new_ms:.3f} | {new_ms / old_ms:.2f} | {versus} |")


if __name__ == "__main__":
    main()
