"""Drive a running Roster from outside, as an application and an identity provider would, and check what
comes back: `python -m tests.image.drive --url http://127.0.0.1:8000 --api-key KEY`.

scripts/container-test.sh runs it against the image's `web` and `worker` containers. Steps: a webhook
receiver on this machine; a directory whose webhook_url points at it (REST API); a user pushed over SCIM;
the signed `user.created` delivery received and verified with the Python client library (and a changed
body refused); the same event read from the directory's changes feed. Prints one JSON line (the
directory id and the event id) and exits 0, or names the failed step and exits 1.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from roster_client import verify_webhook
from roster_client.errors import WebhookVerificationError


class StepFailed(Exception):
    pass


class Delivery:
    def __init__(self, headers: dict[str, str], body: bytes) -> None:
        self.headers = headers
        self.body = body


class Receiver:
    """A webhook endpoint on 127.0.0.1: answers 204 and queues each delivery."""

    def __init__(self) -> None:
        deliveries: queue.Queue[Delivery] = queue.Queue()
        self.deliveries = deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                deliveries.put(Delivery({k: v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/roster"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, event_type: str, timeout: float) -> Delivery:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                delivery = self.deliveries.get(timeout=left)
            except queue.Empty:
                break
            if delivery.headers.get("Roster-Event") == event_type:
                return delivery
        raise StepFailed(f"no {event_type} webhook arrived within {timeout:.0f} s (is the worker running?)")


def call(method: str, url: str, token: str, body: dict | None = None, content_type: str = "application/json") -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310 - a test URL
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise StepFailed(f"{method} {url} answered {exc.code}: {exc.read()[:500]!r}") from None


def drive(base: str, api_key: str, webhook_timeout: float) -> dict[str, str]:
    with Receiver() as receiver:
        created = call(
            "POST",
            f"{base}/api/v1/directory-sync",
            api_key,
            {
                "name": "Container test",
                "tenant": f"ct-{uuid.uuid4().hex[:8]}",
                "product": "image",
                "type": "okta-scim-v2",
                "webhook_url": receiver.url,
            },
        )["data"]
        directory_id, scim_secret = created["id"], created["scim"]["secret"]
        webhook_secret = created["webhook"]["secret"]

        email = "ann.lee@acme.example"
        user = call(
            "POST",
            f"{base}/api/scim/v2.0/{directory_id}/Users",
            scim_secret,
            {
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": email,
                "name": {"givenName": "Ann", "familyName": "Lee"},
                "emails": [{"value": email, "primary": True}],
                "active": True,
            },
            content_type="application/scim+json",
        )

        delivery = receiver.wait_for("user.created", webhook_timeout)
        signature = delivery.headers.get("Roster-Signature")
        event = verify_webhook(body=delivery.body, signature=signature, secret=webhook_secret)
        if (event.directory_id, event.data.get("id"), event.data.get("email")) != (directory_id, user["id"], email):
            raise StepFailed(f"the webhook carries another change: {delivery.body[:500]!r}")
        try:
            verify_webhook(body=delivery.body.replace(b"Ann", b"Eve"), signature=signature, secret=webhook_secret)
        except WebhookVerificationError:
            pass
        else:
            raise StepFailed("a changed body passed verification")

        feed = call("GET", f"{base}/api/v1/directory-sync/{directory_id}/changes?after=0", api_key)["data"]
        entry = next((item for item in feed if item["id"] == event.id), None)
        if entry is None or entry["event"] != "user.created" or entry["sequence"] != event.sequence:
            raise StepFailed(f"the changes feed does not list event {event.id}: {json.dumps(feed)[:500]}")
    return {"directory_id": directory_id, "event_id": event.id, "sequence": str(event.sequence)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.image.drive", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="Roster's base URL")
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--webhook-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    try:
        result = drive(args.url.rstrip("/"), args.api_key, args.webhook_timeout)
    except (StepFailed, WebhookVerificationError) as exc:
        print(f"drive: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
