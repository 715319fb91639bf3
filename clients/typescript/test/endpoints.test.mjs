// Webhook endpoints against a live Roster, and verifyWebhook for both formats with several secrets (the standard
// signature computed here with node:crypto, independently of the client).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";

import { BadRequestError, NotFoundError, Roster, WebhookVerificationError, verifyWebhook } from "../dist/index.js";
import { live, tenant } from "./helpers.mjs";

test("webhook endpoints: create, list, get, update, rotate, test, deliveries, delete", async () => {
  const roster = new Roster(live());
  const mine = tenant("endpoints");
  const created = await roster.webhookEndpoints.create({
    url: "https://hooks.example.com/roster",
    events: ["user.created"],
    tenant: mine,
    format: "standard",
  });
  assert.ok(created.secret.startsWith("whsec_"));
  assert.deepEqual(created.events, ["user.created"]);
  const listed = await roster.webhookEndpoints.list({ tenant: mine }).toArray();
  assert.deepEqual(listed.map((e) => e.id), [created.id]);
  assert.equal("secret" in listed[0], false);
  const updated = await roster.webhookEndpoints.update(created.id, { enabled: false, description: "audit" });
  assert.equal(updated.enabled, false);
  assert.equal(updated.description, "audit");
  const rotated = await roster.webhookEndpoints.rotateSecret(created.id, { graceSeconds: 60 });
  assert.notEqual(rotated.secret, created.secret);
  const outcome = await roster.webhookEndpoints.test(created.id);
  assert.equal(typeof outcome.delivered, "boolean");
  assert.deepEqual(await roster.webhookEndpoints.deliveries(created.id, { failed: true }).toArray(), []);
  await assert.rejects(roster.webhookEndpoints.create({ url: "https://hooks.example.com/x", events: ["nope"] }), BadRequestError);
  await roster.webhookEndpoints.delete(created.id);
  await assert.rejects(roster.webhookEndpoints.get(created.id), NotFoundError);
});

const body = JSON.stringify({ id: "evt_1", event: "user.created", created_at: "2026-01-01T00:00:00.000Z", data: {} });

function standardHeaders(secrets, timestamp) {
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    return `v1,${createHmac("sha256", key).update(`evt_1.${timestamp}.${body}`).digest("base64")}`;
  });
  return { "Webhook-Id": "evt_1", "Webhook-Timestamp": String(timestamp), "Webhook-Signature": signatures.join(" ") };
}

test("verifyWebhook tells the format from the headers and takes several secrets", async () => {
  const now = Math.floor(Date.now() / 1000);
  const oldSecret = `whsec_${Buffer.alloc(32, 1).toString("base64")}`;
  const newSecret = `whsec_${Buffer.alloc(32, 2).toString("base64")}`;
  const other = `whsec_${Buffer.alloc(32, 3).toString("base64")}`;
  const both = standardHeaders([newSecret, oldSecret], now);
  for (const secret of [oldSecret, newSecret, [other, newSecret]]) {
    assert.equal((await verifyWebhook({ body, headers: both, secret })).id, "evt_1");
  }
  const fetchHeaders = new Headers(both);
  assert.equal((await verifyWebhook({ body, headers: fetchHeaders, secret: newSecret })).event, "user.created");
  const mismatch = (error) => error instanceof WebhookVerificationError && error.reason === "mismatch";
  await assert.rejects(verifyWebhook({ body, headers: both, secret: other }), mismatch);
  await assert.rejects(verifyWebhook({ body: `${body} `, headers: both, secret: newSecret }), mismatch);
  const stale = standardHeaders([newSecret], now - 3600);
  await assert.rejects(
    verifyWebhook({ body, headers: stale, secret: newSecret }),
    (error) => error instanceof WebhookVerificationError && error.reason === "timestamp",
  );

  const rosterSecret = "roster-secret";
  const s = createHmac("sha256", rosterSecret).update(`${now}.${body}`).digest("hex");
  const rosterHeaders = { "roster-signature": `t=${now},s=${s}` };
  assert.equal((await verifyWebhook({ body, headers: rosterHeaders, secret: ["other", rosterSecret] })).id, "evt_1");
  await assert.rejects(verifyWebhook({ body, headers: rosterHeaders, secret: ["other"] }), mismatch);
});
