"""The TypeScript client's own tests (clients/typescript/test, Node's built-in runner) against the live Roster of
tests/clients, on the package as built from its sources, with deliveries signed by Roster's signer."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.clients.conftest import ROOT, LiveRoster, record_client_counts
from webhooks.signing import signature_header

PACKAGE = ROOT / "clients" / "typescript"
SECRET = "whsec-typescript-0123456789abcdef"
SIGNED_AT = 1_800_000_000

pytestmark = pytest.mark.django_db(transaction=True)


def node_package_ready() -> None:
    """The package's devDependencies (npm ci, from its lock file) and a build of the current sources."""
    assert shutil.which("node") and shutil.which("npm"), "Node.js and npm are needed (scripts/test.sh installs them)"
    if not (PACKAGE / "node_modules" / ".bin" / "tsc").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True, capture_output=True)
    build = subprocess.run(["node", "scripts/build.mjs"], cwd=PACKAGE, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr


def _event(sequence: int | None, kind: str = "user.created") -> dict:
    event = {
        "id": str(uuid.uuid4()),
        "event": kind,
        "created_at": "2027-01-15T08:00:00.000Z",
        "directory_id": str(uuid.uuid4()),
        "tenant": "acme",
        "product": "crm",
        "data": {"id": str(uuid.uuid4()), "email": "ann@acme.test", "raw": {"userName": "ann", "note": "ünïcode ✓"}},
    }
    if sequence is not None:
        event["sequence"] = sequence
    return event


def _signed(body: str, timestamp: int) -> dict:
    return {
        "body": body,
        "signature": signature_header(body.encode(), SECRET, timestamp),
        "timestamp": timestamp,
        "now": timestamp + 10,
    }


def signed_deliveries(path: Path) -> Path:
    """Deliveries signed exactly as Roster signs them (webhooks/signing.py), for the verification tests."""
    events = [_event(1), _event(2, "user.updated"), _event(None, "dsync.activated")]
    not_events = ["not json", "[1, 2]", '{"event": "x"}']
    path.write_text(
        json.dumps(
            {
                "secret": SECRET,
                "deliveries": [_signed(json.dumps(e, ensure_ascii=False), SIGNED_AT + n) for n, e in enumerate(events)],
                "not_events": [_signed(body, SIGNED_AT) for body in not_events],
            }
        )
    )
    return path


def test_the_typescript_client_passes_its_tests_against_a_live_roster(live_roster: LiveRoster, tmp_path: Path) -> None:
    node_package_ready()
    env = {
        **os.environ,
        "ROSTER_URL": live_roster.url,
        "ROSTER_API_KEY": live_roster.api_key,
        "ROSTER_SIGNED_DELIVERIES": str(signed_deliveries(tmp_path / "signed.json")),
    }
    files = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "test").glob("*.test.mjs"))
    run = subprocess.run(
        ["node", "--test", "--test-reporter=tap", *files],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    counts = {
        key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|cancelled|skipped) (\d+)$", run.stdout, re.M)
    }
    record_client_counts("typescript (@roster/client, node --test)", counts.get("pass", 0), counts.get("fail", 0))
    assert run.returncode == 0 and counts.get("fail") == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert counts.get("pass", 0) >= 25 and counts.get("tests") == counts.get("pass"), counts
