// Directories, users and groups against a live Roster: every method, paging across several pages, filters, errors.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  Paged,
  Roster,
  RosterError,
} from "../dist/index.js";
import { PRODUCT, countingFetch, live, scim, scimUser, tenant } from "./helpers.mjs";

test("directories: create, get, list, update, delete", async () => {
  const roster = new Roster(live());
  const t = tenant("dirs");
  const created = await roster.directories.create({
    name: "Acme Okta",
    tenant: t,
    product: PRODUCT,
    type: "okta-scim-v2",
    webhookUrl: null,
    webhookSecret: null,
  });
  assert.equal(created.name, "Acme Okta");
  assert.equal(created.type, "okta-scim-v2");
  assert.ok(created.scim.secret && created.scim.endpoint.endsWith(created.scim.path));
  assert.equal(created.webhook.endpoint, null);
  assert.equal(created.events.last_sequence, 0);
  assert.deepEqual(await roster.directories.get(created.id), created);

  const other = await roster.directories.create({ tenant: t, product: PRODUCT });
  await roster.directories.create({ tenant: `${t}-other`, product: PRODUCT });
  const listed = roster.directories.list({ tenant: t, product: PRODUCT });
  assert.ok(listed instanceof Paged);
  assert.deepEqual((await listed.toArray()).map((d) => d.id), [created.id, other.id]);

  const updated = await roster.directories.update(created.id, {
    name: "Renamed",
    logWebhookEvents: true,
    attributeMap: { employee_id: "externalId" },
  });
  assert.equal(updated.name, "Renamed");
  assert.equal(updated.log_webhook_events, true);
  assert.deepEqual(updated.attribute_map, { employee_id: "externalId" });
  assert.deepEqual((await roster.directories.update(created.id, { attributeMap: null })).attribute_map, {});
  // The SCIM rate limit: the directory's own, then the deployment's again (null).
  assert.equal(created.scim_rate_limit, null);
  assert.equal((await roster.directories.update(created.id, { scimRateLimit: 2400 })).scim_rate_limit, 2400);
  assert.equal((await roster.directories.update(created.id, { scimRateLimit: null })).scim_rate_limit, null);
  assert.equal((await roster.directories.create({ tenant: `${t}-limited`, product: PRODUCT, scimRateLimit: 0 })).scim_rate_limit, 0);
  assert.equal((await roster.directories.get(created.id)).name, "Renamed");

  await roster.directories.delete(created.id);
  await assert.rejects(roster.directories.get(created.id), (error) => {
    assert.ok(error instanceof NotFoundError && error instanceof RosterError);
    assert.equal(error.status, 404);
    assert.equal(error.message, "Directory not found.");
    assert.ok(error.requestId);
    return true;
  });
});

test("directories: the SCIM secret's rotation and the two logs", async () => {
  const roster = new Roster(live());
  const directory = await roster.directories.create({ tenant: tenant("secret"), product: PRODUCT });
  const rotated = await roster.directories.rotateScimSecret(directory.id, { graceSeconds: 600 });
  assert.notEqual(rotated.scim.secret, directory.scim.secret);
  assert.ok(rotated.scim.previous_secret_expires_at);
  await scimUser(directory, "ann@acme.test"); // the previous secret still works during the grace
  const revoked = await roster.directories.revokePreviousScimSecret(directory.id);
  assert.equal(revoked.scim.previous_secret_expires_at, null);
  await assert.rejects(scimUser(directory, "bob@acme.test"), /401/);
  assert.deepEqual(await roster.directories.deliveries(directory.id).toArray(), []);
  // The SCIM request log is written in the background, a moment later.
  let failed = [];
  for (let i = 0; i < 100 && failed.length === 0; i++) {
    failed = await roster.directories.scimRequests(directory.id, { failed: true }).toArray();
    if (failed.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual(failed.map((entry) => [entry.status, entry.method]), [[401, "POST"]]);
});

test("users: every page, fetched as they are read", async () => {
  const counted = countingFetch();
  const roster = new Roster({ ...live(), fetch: counted.fetch });
  const t = tenant("paging");
  const directory = await roster.directories.create({ tenant: t, product: PRODUCT });
  const ids = [];
  for (let start = 0; start < 250; start += 25) {
    const batch = Array.from({ length: 25 }, (_, n) => scimUser(directory, `user${start + n}@acme.test`));
    ids.push(...(await Promise.all(batch)).map((user) => user.id));
  }
  counted.requests.length = 0;
  const users = roster.users.list({ tenant: t, product: PRODUCT, pageLimit: 100 });
  assert.equal(counted.requests.length, 0); // nothing fetched before it is read
  const seen = [];
  for await (const user of users) {
    seen.push(user.id);
    if (seen.length === 1) assert.equal(counted.requests.length, 1);
  }
  assert.deepEqual([...seen].sort(), [...ids].sort());
  assert.equal(new Set(seen).size, 250);
  const pages = counted.requests.map((r) => [r.url.searchParams.get("pageOffset"), r.url.searchParams.get("pageLimit")]);
  assert.deepEqual(pages, [["0", "100"], ["100", "100"], ["200", "100"]]);
});

test("users and groups: filters, get, a user's groups, a group's members", async () => {
  const roster = new Roster(live());
  const t = tenant("filters");
  const directory = await roster.directories.create({ tenant: t, product: PRODUCT });
  const ann = await scimUser(directory, "ann", {
    name: { givenName: "Ann", familyName: "Lee" },
    emails: [{ value: "Ann@Acme.test", primary: true }],
  });
  const bob = await scimUser(directory, "bob", { active: false, emails: [{ value: "bob@acme.test" }] });
  const group = await scim(directory, "POST", "/Groups", {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"],
    displayName: "Eng",
    members: [{ value: ann.id }],
  });
  const scope = { tenant: t, product: PRODUCT };
  const ids = async (paged) => (await paged.toArray()).map((item) => item.id);
  assert.deepEqual(await ids(roster.users.list({ ...scope, email: "ann@acme.TEST" })), [ann.id]);
  assert.deepEqual(await ids(roster.users.list({ ...scope, active: false })), [bob.id]);
  assert.deepEqual(await ids(roster.users.list({ ...scope, group: group.id })), [ann.id]);
  assert.deepEqual(await ids(roster.users.list({ ...scope, directoryId: directory.id })), [ann.id, bob.id]);
  const all = await roster.users.list(scope).toArray();
  const newest = all.map((u) => u.updated_at).sort().at(-1);
  assert.deepEqual(await roster.users.list({ ...scope, updatedAfter: newest }).toArray(), []);

  const got = await roster.users.get(ann.id, scope);
  assert.equal(got.first_name, "Ann");
  assert.equal(got.email, "Ann@Acme.test");
  assert.equal(got.raw.userName, "ann");
  assert.deepEqual((await roster.users.groups(ann.id, scope).toArray()).map((g) => g.name), ["Eng"]);
  await assert.rejects(roster.users.get(ann.id, { tenant: `${t}-x`, product: PRODUCT }), NotFoundError);

  assert.deepEqual(await ids(roster.groups.list(scope)), [group.id]);
  assert.deepEqual(await roster.groups.list({ ...scope, name: "nope" }).toArray(), []);
  const detail = await roster.groups.get(group.id, scope);
  assert.equal(detail.name, "Eng");
  assert.deepEqual(detail.members, [{ group_id: group.id, user_id: ann.id }]);
});

test("a directory's own users and groups, with the filters", async () => {
  const roster = new Roster(live());
  const t = tenant("own");
  const directory = await roster.directories.create({ tenant: t, product: PRODUCT });
  const other = await roster.directories.create({ tenant: t, product: PRODUCT });
  const ann = await scimUser(directory, "ann", { emails: [{ value: "Ann@Acme.test" }] });
  const bob = await scimUser(directory, "bob", { active: false });
  await scimUser(other, "carl");
  const group = await scim(directory, "POST", "/Groups", {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"],
    displayName: "Eng",
    members: [{ value: ann.id }],
  });
  const ids = async (paged) => (await paged.toArray()).map((item) => item.id);
  assert.deepEqual(await ids(roster.directories.users(directory.id)), [ann.id, bob.id]);
  assert.deepEqual(await ids(roster.directories.users(directory.id, { pageLimit: 1 })), [ann.id, bob.id]);
  assert.deepEqual(await ids(roster.directories.users(directory.id, { active: false })), [bob.id]);
  assert.deepEqual(await ids(roster.directories.users(directory.id, { email: "ann@acme.TEST" })), [ann.id]);
  assert.deepEqual(await ids(roster.directories.users(directory.id, { group: group.id })), [ann.id]);
  const newest = (await roster.directories.users(directory.id).toArray()).map((u) => u.updated_at).sort().at(-1);
  assert.deepEqual(await roster.directories.users(directory.id, { updatedAfter: newest }).toArray(), []);
  assert.deepEqual((await roster.directories.users(other.id).toArray()).map((u) => u.raw.userName), ["carl"]);
  assert.deepEqual(await ids(roster.directories.groups(directory.id)), [group.id]);
  assert.deepEqual(await roster.directories.groups(directory.id, { name: "nope" }).toArray(), []);
  assert.deepEqual(await roster.directories.groups(other.id).toArray(), []);
  await assert.rejects(roster.directories.users("00000000-0000-4000-8000-000000000000").toArray(), NotFoundError);
});

test("errors carry the status, the message and the request id", async () => {
  const roster = new Roster(live());
  await assert.rejects(roster.directories.create({ tenant: "ac:me", product: PRODUCT }), (error) => {
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.status, 400);
    assert.match(error.message, /tenant/);
    assert.ok(error.requestId);
    return true;
  });
  const stranger = new Roster({ ...live(), apiKey: "wrong" });
  await assert.rejects(stranger.directories.list({ tenant: "acme", product: PRODUCT }).toArray(), AuthenticationError);
  const directory = await roster.directories.create({ tenant: tenant("errors"), product: PRODUCT });
  await assert.rejects(roster.changes.resend(directory.id, { fromSequence: 1, toSequence: 2 }), ConflictError);
});

test("the address and key come from the environment when not given", async () => {
  const roster = new Roster();
  assert.equal(roster.baseUrl, live().baseUrl);
  assert.throws(() => new Roster({ baseUrl: "ftp://roster", apiKey: "k" }), TypeError);
});
