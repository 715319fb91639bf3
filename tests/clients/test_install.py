"""Both libraries install from this repository as an application developer installs them, into fresh
environments, and work against the live Roster there: `pip install ./clients/python` into a new virtualenv
(also on the oldest Python the library supports, when this machine has it), and `npm install
./clients/typescript` into a new folder from a copy of the package as a fresh clone has it (no node_modules,
no dist: npm's prepare builds it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.conftest import PRODUCT, ROOT, TENANT, LiveRoster
from webhooks.signing import signature_header

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

SECRET = "whsec-install-0123456789abcdef"
EVENT = {"id": "e-1", "event": "user.created", "created_at": "2030-01-01T00:00:00.000Z", "sequence": 1, "data": {}}

PYTHON_SCRIPT = """
import json, sys
from roster_client import Roster, verify_webhook, WebhookVerificationError, RosterError, __version__
roster = Roster()
d = roster.directories.create(name="Installed", tenant=sys.argv[1], product=sys.argv[2], type="okta-scim-v2")
listed = [x.id for x in roster.directories.list(tenant=sys.argv[1], product=sys.argv[2])]
link = roster.setup_links.create(d.id, expires_in=3600)
links = [x.id for x in roster.setup_links.list(d.id)] == [link.id] and "/setup/" in link.url
held = list(roster.held_changes.list(d.id)) == [] and roster.held_changes.discard(d.id).discarded == 0
body, header = sys.argv[3].encode(), sys.argv[4]
event = verify_webhook(body=body, signature=header, secret=sys.argv[5])
try:
    verify_webhook(body=body + b" ", signature=header, secret=sys.argv[5])
    refused = False
except WebhookVerificationError:
    refused = True
print(json.dumps({"version": __version__, "listed": listed == [d.id], "event": event.id, "refused": refused,
                  "links": links, "held": held, "python": list(sys.version_info[:2])}))
"""

NODE_SCRIPT = """
import { Roster, verifyWebhook, WebhookVerificationError, VERSION } from "@roster/client";
const [tenant, product, body, header, secret] = process.argv.slice(2);
const roster = new Roster();
const d = await roster.directories.create({ name: "Installed", tenant, product, type: "okta-scim-v2" });
const listed = (await roster.directories.list({ tenant, product }).toArray()).map((x) => x.id);
const link = await roster.setupLinks.create(d.id, { expiresIn: 3600 });
const linkIds = (await roster.setupLinks.list(d.id).toArray()).map((x) => x.id);
const links = linkIds.length === 1 && linkIds[0] === link.id && link.url.includes("/setup/");
const held = (await roster.heldChanges.list(d.id).toArray()).length === 0
  && (await roster.heldChanges.discard(d.id)).discarded === 0;
const event = await verifyWebhook({ body, signature: header, secret });
const refused = await verifyWebhook({ body: body + " ", signature: header, secret }).then(
  () => false, (error) => error instanceof WebhookVerificationError);
const one = listed.length === 1 && listed[0] === d.id;
console.log(JSON.stringify({ version: VERSION, listed: one, event: event.id, refused, links, held }));
"""

TYPED_USE = """
import { Roster, type User, type Change } from "@roster/client";
const roster = new Roster({ baseUrl: "https://roster.example.com", apiKey: "k" });
export async function emails(): Promise<string[]> {
  const found: string[] = [];
  for await (const user of roster.users.list({ tenant: "acme", product: "crm" })) found.push((user as User).email);
  return found;
}
export async function sequences(id: string): Promise<number[]> {
  const found: number[] = [];
  for await (const change of roster.changes.list(id, { after: 0 })) found.push((change as Change).sequence);
  return found;
}
"""


def _signed() -> tuple[str, str]:
    body = json.dumps(EVENT)
    return body, signature_header(body.encode(), SECRET)


def _environment(live_roster: LiveRoster) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    return {**env, "ROSTER_URL": live_roster.url, "ROSTER_API_KEY": live_roster.api_key}


def _oldest_python() -> list[str]:
    """Python 3.9, the oldest the library supports, when this machine has one that runs."""
    candidates = [str(p) for p in sorted(Path("/root/.pyenv/versions").glob("3.9.*/bin/python"))]
    candidates += [found] if (found := shutil.which("python3.9")) else []
    for candidate in candidates:
        if subprocess.run([candidate, "-c", "import venv"], capture_output=True).returncode == 0:
            return [candidate]
    return []


PYTHONS = {"this-python": sys.executable}
PYTHONS.update(("python3.9", path) for path in _oldest_python())


@pytest.mark.parametrize("python", list(PYTHONS.values()), ids=list(PYTHONS))
def test_pip_install_from_the_repository_into_a_fresh_virtualenv(
    python: str, live_roster: LiveRoster, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT / "clients" / "python")],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    body, header = _signed()
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-c", PYTHON_SCRIPT, TENANT, PRODUCT, body, header, SECRET],
        cwd=tmp_path,
        env=_environment(live_roster),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["listed"] and result["refused"] and result["event"] == "e-1"
    assert result["links"] and result["held"]
    expected = subprocess.run([python, "-c", "import sys; print(list(sys.version_info[:2]))"], capture_output=True)
    assert result["python"] == json.loads(expected.stdout)
    assert (
        result["version"] == (ROOT / "clients" / "python" / "roster_client" / "_version.py").read_text().split('"')[1]
    )


def test_npm_install_from_a_fresh_clone_into_a_fresh_folder(live_roster: LiveRoster, tmp_path: Path) -> None:
    assert shutil.which("node") and shutil.which("npm"), "Node.js and npm are needed (scripts/test.sh installs them)"
    package = tmp_path / "clone" / "clients" / "typescript"
    shutil.copytree(ROOT / "clients" / "typescript", package, ignore=shutil.ignore_patterns("node_modules", "dist"))
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text(
        json.dumps({"name": "app", "version": "1.0.0", "type": "module", "private": True})
    )
    install = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", str(package)], cwd=app, capture_output=True, text=True
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert (package / "dist" / "index.js").exists() and (package / "dist" / "index.d.ts").exists()
    manifest = json.loads((app / "package.json").read_text())
    assert "@roster/client" in manifest["dependencies"]
    assert not (app / "node_modules" / "typescript").exists()  # nothing but the client: no runtime dependency

    (app / "app.mjs").write_text(NODE_SCRIPT)
    body, header = _signed()
    run = subprocess.run(
        ["node", "app.mjs", TENANT, PRODUCT, body, header, SECRET],
        cwd=app,
        env=_environment(live_roster),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    expected = {"version": "1.0.0", "listed": True, "event": "e-1", "refused": True, "links": True, "held": True}
    assert result == expected

    # Its type declarations serve a TypeScript application (the compiler the repository pins).
    (app / "use.ts").write_text(TYPED_USE)
    tsc = ROOT / "clients" / "typescript" / "node_modules" / ".bin" / "tsc"
    options = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022"]
    checked = subprocess.run(
        [str(tsc), *options, "--lib", "es2022,dom", "use.ts"], cwd=app, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
