// The changes feed: list and follow against a live Roster; resend; ResyncRequired on a 410 and on a gap
// (a scripted server: a live Roster cannot be made to purge its feed, nor ever shows a gap).
import assert from "node:assert/strict";
import { test } from "node:test";

import { ResyncRequired, Roster } from "../dist/index.js";
import { PRODUCT, countingFetch, failed, fakeRoster, feedItem, live, ok, scimUser, tenant } from "./helpers.mjs";

async function users(directory, count, prefix = "u") {
  const made = [];
  for (let n = 0; n < count; n++) made.push((await scimUser(directory, `${prefix}${n}@acme.test`)).id);
  return made;
}

const positions = (requests) =>
  requests
    .filter((r) => r.url.pathname.endsWith("/changes"))
    .map((r) => [r.url.searchParams.get("after"), r.url.searchParams.get("limit")]);

test("changes.list reads every page, then stops", async () => {
  const counted = countingFetch();
  const roster = new Roster({ ...live(), fetch: counted.fetch });
  const directory = await roster.directories.create({ tenant: tenant("feed"), product: PRODUCT });
  const ids = await users(directory, 5);
  const changes = [];
  for await (const change of roster.changes.list(directory.id, { after: 0, limit: 2 })) changes.push(change);
  assert.deepEqual(changes.map((c) => c.sequence), [1, 2, 3, 4, 5]);
  assert.deepEqual(changes.map((c) => c.data.id), ids);
  assert.ok(changes.every((c) => c.event === "user.created" && c.directory_id === directory.id));
  assert.equal(changes[0].delivery.status, "dropped");
  assert.deepEqual(positions(counted.requests), [["0", "2"], ["2", "2"], ["4", "2"]]);
  assert.equal((await roster.directories.get(directory.id)).events.last_sequence, 5);
});

test("changes.follow waits for new events and never skips one", async () => {
  const counted = countingFetch();
  const naps = [];
  let directory;
  // Called at the feed's head: new changes arrive while the follower waits.
  const sleep = async (seconds) => {
    naps.push(seconds);
    if (naps.length <= 2) await users(directory, 2, `late${naps.length}-`);
  };
  const roster = new Roster({ ...live(), fetch: counted.fetch, sleep });
  directory = await roster.directories.create({ tenant: tenant("follow"), product: PRODUCT });
  await users(directory, 3);
  counted.requests.length = 0;
  const seen = [];
  for await (const change of roster.changes.follow(directory.id, { after: 1, pollInterval: 0.25 })) {
    seen.push(change.sequence);
    if (seen.length === 6) break;
  }
  assert.deepEqual(seen, [2, 3, 4, 5, 6, 7]);
  assert.deepEqual(naps, [0.25, 0.25]);
  assert.deepEqual(positions(counted.requests), [["1", "100"], ["3", "100"], ["5", "100"]]);
});

test("changes.follow stops when its signal aborts", async () => {
  const roster = new Roster({ ...live(), sleep: async () => controller.abort() });
  const controller = new AbortController();
  const directory = await roster.directories.create({ tenant: tenant("abort"), product: PRODUCT });
  await users(directory, 1);
  const seen = [];
  for await (const change of roster.changes.follow(directory.id, { signal: controller.signal })) seen.push(change.sequence);
  assert.deepEqual(seen, [1]);
});

test("a 410 from the feed is ResyncRequired, for list and follow", async () => {
  const gone = failed(410, "Events after sequence 0 are no longer kept. Resynchronise from the user and group lists.");
  const fake = await fakeRoster(gone);
  try {
    const roster = new Roster({ baseUrl: fake.url, apiKey: "k" });
    for (const read of [roster.changes.list("d1"), roster.changes.follow("d1", { pollInterval: 0 })]) {
      await assert.rejects(
        (async () => {
          for await (const change of read) assert.fail(`yielded ${change.sequence}`);
        })(),
        (error) => {
          assert.ok(error instanceof ResyncRequired);
          assert.equal(error.status, 410);
          assert.equal(error.directoryId, "d1");
          assert.equal(error.after, 0);
          assert.equal(error.requestId, "fake-1");
          assert.match(error.message, /Resynchronise/);
          return true;
        },
      );
    }
  } finally {
    await fake.close();
  }
});

test("a gap in the feed is ResyncRequired, and nothing past it is yielded", async () => {
  const fake = await fakeRoster(ok([1, 2, 4, 5].map((n) => feedItem(n, "d1"))));
  try {
    const roster = new Roster({ baseUrl: fake.url, apiKey: "k", sleep: async () => {} });
    const seen = [];
    await assert.rejects(
      (async () => {
        for await (const change of roster.changes.follow("d1")) seen.push(change.sequence);
      })(),
      (error) => error instanceof ResyncRequired && error.after === 2 && error.status === null && /2 to 4/.test(error.message),
    );
    assert.deepEqual(seen, [1, 2]);
  } finally {
    await fake.close();
  }
});

test("changes.resend sends the range or the ids asked for", async () => {
  const fake = await fakeRoster({ status: 202, body: { data: { queued: 2 }, error: null } });
  try {
    const roster = new Roster({ baseUrl: fake.url, apiKey: "k" });
    assert.deepEqual(await roster.changes.resend("d1", { fromSequence: 1, toSequence: 2 }), { queued: 2 });
    await roster.changes.resend("d1", { eventIds: ["e1"] });
    assert.deepEqual(fake.requests.map((r) => [r.method, r.url]), [
      ["POST", "/api/v1/directory-sync/d1/changes/resend"],
      ["POST", "/api/v1/directory-sync/d1/changes/resend"],
    ]);
    await assert.rejects(roster.changes.resend("d1", { fromSequence: 1 }), TypeError);
  } finally {
    await fake.close();
  }
});
