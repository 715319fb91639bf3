// Setup links, the deprovision guard's held changes, and the SCIM endpoint's OAuth client secret and
// static-secret switch, against a live Roster.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BadRequestError, ConflictError, NotFoundError, Roster } from "../dist/index.js";
import { PRODUCT, live, scim, scimUser, tenant } from "./helpers.mjs";

test("setup links: create, list, revoke", async () => {
  const roster = new Roster(live());
  const directory = await roster.directories.create({ tenant: tenant("links"), product: PRODUCT, type: "okta-scim-v2" });
  const link = await roster.setupLinks.create(directory.id, {
    expiresIn: 3600,
    returnUrl: "https://app.example.com/done",
    allowMapping: true,
  });
  assert.equal(link.status, "active");
  assert.equal(link.allow_mapping, true);
  assert.ok(link.url.startsWith(`${live().baseUrl}/setup/`));
  const page = await fetch(link.url);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /Okta/);

  const [listed, ...more] = await roster.setupLinks.list(directory.id).toArray();
  assert.equal(more.length, 0);
  assert.equal(listed.id, link.id);
  assert.equal(listed.opened_count, 1);
  assert.equal("url" in listed, false); // the token is shown once, never listed

  await roster.setupLinks.revoke(directory.id, link.id);
  assert.deepEqual((await roster.setupLinks.list(directory.id).toArray()).map((l) => l.status), ["revoked"]);
  assert.equal((await fetch(link.url)).status, 404);
  await assert.rejects(roster.setupLinks.create(directory.id, { expiresIn: 10 }), (error) => {
    assert.ok(error instanceof BadRequestError && /expires_in/.test(error.message));
    return true;
  });
  await assert.rejects(roster.setupLinks.revoke(directory.id, "00000000-0000-0000-0000-000000000000"), NotFoundError);
});

test("held changes: list, approve some, discard the rest", async () => {
  const roster = new Roster(live());
  const t = tenant("guard");
  const directory = await roster.directories.create({ tenant: t, product: PRODUCT });
  const guarded = await roster.directories.update(directory.id, { deprovisionGuard: { maxUsers: 1, maxPercent: 1 } });
  assert.equal(guarded.deprovision_guard.max_users, 1);
  assert.equal(guarded.deprovision_guard.max_percent, 1);
  const users = [];
  for (let n = 0; n < 4; n++) users.push(await scimUser(directory, `user${n}@acme.test`));
  // The first goes through; the second trips the guard; the third is held too.
  for (const user of users.slice(0, 3)) await scim(directory, "DELETE", `/Users/${user.id}`);

  const held = await roster.heldChanges.list(directory.id).toArray();
  assert.deepEqual(
    held.map((h) => [h.user_id, h.change]),
    [
      [users[1].id, "delete"],
      [users[2].id, "delete"],
    ],
  );
  assert.equal((await roster.directories.get(directory.id)).guard.state, "tripped");
  const seen = () => roster.users.list({ tenant: t, product: PRODUCT, directoryId: directory.id }).toArray();
  assert.equal((await seen()).length, 3); // the application sees the held users until a person approves

  assert.deepEqual(await roster.heldChanges.approve(directory.id, [held[0].id]), { approved: 1 });
  assert.deepEqual(await roster.heldChanges.discard(directory.id), { discarded: 1 });
  assert.deepEqual(await roster.heldChanges.list(directory.id).toArray(), []);
  assert.equal((await roster.directories.get(directory.id)).guard.state, "armed");
  assert.deepEqual(new Set((await seen()).map((u) => u.id)), new Set([users[2].id, users[3].id]));
  await assert.rejects(roster.heldChanges.approve(directory.id, []), TypeError);
  await assert.rejects(roster.heldChanges.approve(directory.id, [held[0].id]), BadRequestError);
});

test("SCIM OAuth: a client secret, tokens, the static secret switched off", async () => {
  const roster = new Roster(live());
  const directory = await roster.directories.create({ tenant: tenant("oauth"), product: PRODUCT });
  assert.equal(directory.scim.oauth.enabled, false);
  assert.equal(directory.scim.oauth.client_id, directory.id);
  await assert.rejects(roster.directories.update(directory.id, { staticSecretEnabled: false }), ConflictError);

  const { oauth } = (await roster.directories.rotateScimOauthSecret(directory.id)).scim;
  assert.equal(oauth.enabled, true);
  assert.ok(oauth.client_secret && oauth.token_endpoint.startsWith(live().baseUrl));
  assert.equal((await roster.directories.get(directory.id)).scim.oauth.client_secret, undefined); // shown once
  const grant = await fetch(oauth.token_endpoint, {
    method: "POST",
    headers: {
      Authorization: `Basic ${Buffer.from(`${oauth.client_id}:${oauth.client_secret}`).toString("base64")}`,
      "Content-Type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  const { access_token: token } = await grant.json();

  const off = await roster.directories.update(directory.id, { staticSecretEnabled: false });
  assert.equal(off.scim.static_secret_enabled, false);
  const users = (bearer) =>
    fetch(`${live().baseUrl}/api/scim/v2.0/${directory.id}/Users`, { headers: { Authorization: `Bearer ${bearer}` } });
  assert.equal((await users(directory.scim.secret)).status, 401);
  assert.equal((await users(token)).status, 200);
  await roster.directories.rotateScimOauthSecret(directory.id); // ends every earlier token
  assert.equal((await users(token)).status, 401);
});

test("SCIM OAuth: several client secrets, listed, added with an expiry, revoked one by one", async () => {
  const roster = new Roster(live());
  const directory = await roster.directories.create({ tenant: tenant("secrets"), product: PRODUCT });
  const one = await roster.directories.addScimOauthSecret(directory.id, { expiresInDays: 30 });
  const two = await roster.directories.addScimOauthSecret(directory.id);
  assert.ok(one.client_secret && one.expires_at > one.created_at);
  const listed = await roster.directories.scimOauthSecrets(directory.id);
  assert.deepEqual(listed.map((s) => s.id), [two.id, one.id]);
  assert.equal(listed[1].hint, one.client_secret.slice(-4));
  assert.equal("client_secret" in listed[0], false); // shown once, never listed
  const grant = async (secret) => {
    const answer = await fetch(directory.scim.oauth.token_endpoint, {
      method: "POST",
      headers: {
        Authorization: `Basic ${Buffer.from(`${directory.id}:${secret}`).toString("base64")}`,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    return (await answer.json()).access_token;
  };
  const users = (bearer) =>
    fetch(`${live().baseUrl}/api/scim/v2.0/${directory.id}/Users`, { headers: { Authorization: `Bearer ${bearer}` } });
  const [first, second] = [await grant(one.client_secret), await grant(two.client_secret)];
  await roster.directories.revokeScimOauthSecret(directory.id, one.id);
  assert.equal((await users(first)).status, 401);
  assert.equal((await users(second)).status, 200);
  await assert.rejects(roster.directories.revokeScimOauthSecret(directory.id, one.id), NotFoundError);
  await assert.rejects(roster.directories.addScimOauthSecret(directory.id, { expiresInDays: 0 }), BadRequestError);
});
