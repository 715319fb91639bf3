// verifyWebhook against deliveries signed by Roster's own signer (webhooks/signing.py): Roster's test suite
// writes them to ROSTER_SIGNED_DELIVERIES (tests/clients/typescript), with the secret they were signed with.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { WebhookVerificationError, verifySignature, verifyWebhook } from "../dist/index.js";

const signed = JSON.parse(readFileSync(process.env.ROSTER_SIGNED_DELIVERIES, "utf8"));
const { secret, deliveries } = signed;
const [first] = deliveries;

function rejectsWith(promise, reason) {
  return assert.rejects(promise, (error) => error instanceof WebhookVerificationError && error.reason === reason);
}

test("deliveries signed by Roster verify and give their event", async () => {
  assert.ok(deliveries.length >= 2);
  for (const delivery of deliveries) {
    const event = await verifyWebhook({ body: delivery.body, signature: delivery.signature, secret, now: delivery.now });
    assert.deepEqual(event, JSON.parse(delivery.body));
  }
  const bytes = new TextEncoder().encode(first.body);
  assert.equal((await verifyWebhook({ body: bytes, signature: first.signature, secret, now: first.now })).id, JSON.parse(first.body).id);
  assert.equal(await verifySignature({ body: bytes.buffer, signature: first.signature, secret, now: first.now }), first.timestamp);
});

test("a changed body, another secret or a swapped timestamp is a mismatch", async () => {
  await rejectsWith(verifyWebhook({ body: `${first.body} `, signature: first.signature, secret, now: first.now }), "mismatch");
  await rejectsWith(verifyWebhook({ body: first.body, signature: first.signature, secret: "other", now: first.now }), "mismatch");
  const forged = first.signature.replace(`t=${first.timestamp}`, `t=${first.timestamp + 1}`);
  await rejectsWith(verifyWebhook({ body: first.body, signature: forged, secret, now: first.now }), "mismatch");
  await rejectsWith(verifyWebhook({ body: first.body, signature: `t=${first.timestamp},s=ünïcode`, secret, now: first.now }), "mismatch");
});

test("a timestamp outside the tolerance is refused, and the tolerance can be set", async () => {
  for (const skew of [301, -301, 3600]) {
    await rejectsWith(verifyWebhook({ body: first.body, signature: first.signature, secret, now: first.timestamp + skew }), "timestamp");
  }
  const late = { body: first.body, signature: first.signature, secret, now: first.timestamp + 3600 };
  assert.ok(await verifyWebhook({ ...late, tolerance: 4000 }));
  // Without `now`, the clock: a delivery signed long ago is too old.
  await rejectsWith(verifyWebhook({ body: first.body, signature: first.signature, secret }), "timestamp");
});

test("malformed headers are refused with a clear error", async () => {
  for (const header of [undefined, null, "", "garbage", "t=abc,s=00", "s=00", "t=123", "t=-5,s=00", "t=1 2,s=00", "t=١٢٣,s=00"]) {
    await rejectsWith(verifyWebhook({ body: first.body, signature: header, secret }), "malformed");
  }
  await rejectsWith(verifyWebhook({ body: first.body, signature: first.signature, secret: "" }), "secret");
});

test("one matching signature among several is accepted", async () => {
  const [t, s] = first.signature.split(",");
  const event = await verifyWebhook({ body: first.body, signature: `${t},s=deadbeef,${s}`, secret, now: first.now });
  assert.equal(event.id, JSON.parse(first.body).id);
});

test("a signed body that is not an event is refused", async () => {
  for (const other of signed.not_events) {
    await rejectsWith(verifyWebhook({ body: other.body, signature: other.signature, secret, now: other.now }), "body");
  }
});
