// Retries on 429 and 503 honouring Retry-After, bounded, and nothing else retried: a scripted local server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { GoneError, Roster, RosterError, retryAfterSeconds } from "../dist/index.js";
import { failed, fakeRoster, ok } from "./helpers.mjs";

const USER = {
  id: "0b5c4f8e-1111-4f0a-9d0e-2a3b4c5d6e7f",
  first_name: "Ann",
  last_name: "Lee",
  email: "ann@acme.test",
  active: true,
  raw: { userName: "ann" },
  created_at: "2030-01-01T00:00:00.000Z",
  updated_at: "2030-01-01T00:00:00.123Z",
  custom_attributes: {},
  roles: [],
};

async function withFake(answers, options, run) {
  const fake = await fakeRoster(...answers);
  const naps = [];
  try {
    const roster = new Roster({ baseUrl: fake.url, apiKey: "k", sleep: async (s) => naps.push(s), ...options });
    await run(roster, fake, naps);
  } finally {
    await fake.close();
  }
}

for (const status of [429, 503]) {
  test(`${status} is retried after what Retry-After says`, () =>
    withFake([failed(status, "wait", { "Retry-After": "7" }), failed(status, "wait", { "Retry-After": "2" }), ok(USER)], {}, async (roster, fake, naps) => {
      assert.equal((await roster.users.get(USER.id, { tenant: "acme", product: "crm" })).email, USER.email);
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(naps, [7, 2]);
    }));
}

test("retries are bounded and the last answer is thrown", () =>
  withFake([failed(503, "database unavailable", { "Retry-After": "1" })], { maxRetries: 2 }, async (roster, fake, naps) => {
    await assert.rejects(roster.directories.get("d1"), (error) => {
      assert.equal(error.constructor, RosterError);
      assert.equal(error.status, 503);
      assert.equal(error.message, "database unavailable");
      assert.equal(error.requestId, "fake-1");
      return true;
    });
    assert.equal(fake.requests.length, 3);
    assert.deepEqual(naps, [1, 1]);
  }));

test("Retry-After as a date, and the cap on a wait", () =>
  withFake(
    [failed(429, "x", { "Retry-After": new Date(Date.now() + 30_000).toUTCString() }), failed(429, "x", { "Retry-After": "3600" }), ok(USER)],
    { maxRetryWait: 10 },
    async (roster, _fake, naps) => {
      await roster.users.get("u", { tenant: "acme", product: "crm" });
      assert.deepEqual(naps, [10, 10]);
      const inThirty = retryAfterSeconds(new Date(Date.now() + 30_000).toUTCString());
      assert.ok(inThirty > 25 && inThirty <= 30);
      assert.equal(retryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
      assert.equal(retryAfterSeconds("soon"), null);
    },
  ));

test("without Retry-After the wait backs off", () =>
  withFake([failed(429), failed(429), failed(429), ok(USER)], {}, async (roster, _fake, naps) => {
    await roster.users.get("u", { tenant: "acme", product: "crm" });
    assert.deepEqual(naps, [0.5, 1, 2]);
  }));

for (const status of [400, 404, 409, 410, 500, 502]) {
  test(`${status} is not retried`, () =>
    withFake([failed(status, "no", { "Retry-After": "1" })], {}, async (roster, fake, naps) => {
      await assert.rejects(roster.directories.get("d1"), (error) => error.status === status && (error instanceof GoneError) === (status === 410));
      assert.equal(fake.requests.length, 1);
      assert.deepEqual(naps, []);
    }));
}

test("204 No Content is a success without a body", () =>
  withFake([{ status: 204 }], {}, async (roster, fake) => {
    assert.equal(await roster.directories.delete("d1"), undefined);
    assert.deepEqual(fake.requests, [{ method: "DELETE", url: "/api/v1/directory-sync/d1" }]);
  }));

test("no answer is not retried", async () => {
  const naps = [];
  const roster = new Roster({ baseUrl: "http://127.0.0.1:9", apiKey: "k", sleep: async (s) => naps.push(s) });
  await assert.rejects(roster.directories.get("d1"), (error) => error instanceof RosterError && error.status === null);
  assert.deepEqual(naps, []);
});

test("fields from a newer Roster are kept; ids are one path segment", () =>
  withFake([ok({ ...USER, nickname: "annie" })], {}, async (roster, fake) => {
    const user = await roster.users.get("../x?y=1", { tenant: "acme", product: "crm" });
    assert.equal(user.nickname, "annie");
    assert.equal(fake.requests[0].url, "/api/v1/directory-sync/users/..%2Fx%3Fy%3D1?tenant=acme&product=crm");
    assert.throws(() => roster.users.list({ tenant: "acme", product: "crm", pageLimit: 1001 }), RangeError);
    assert.throws(() => roster.changes.list("d", { limit: 0 }), RangeError);
  }));
