// A directory's history against a live Roster: users, groups and members at a point, and the diff, pages joined.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BadRequestError, NotFoundError, Roster } from "../dist/index.js";
import { PRODUCT, live, scim, scimUser, tenant } from "./helpers.mjs";

test("history: snapshots at a point and the diff since", async () => {
  const roster = new Roster(live());
  const directory = await roster.directories.create({ tenant: tenant("history"), product: PRODUCT });
  const users = [];
  for (let n = 0; n < 3; n++) users.push(await scimUser(directory, `h${n}@acme.test`));
  const group = await scim(directory, "POST", "/Groups", {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"],
    displayName: "Staff",
    members: [{ value: users[0].id }, { value: users[1].id }],
  });
  const middle = (await roster.directories.get(directory.id)).events.last_sequence;
  await scim(directory, "DELETE", `/Users/${users[0].id}`);

  const then = await roster.history.users(directory.id, { sequence: middle, pageLimit: 2 }).toArray();
  assert.deepEqual(then.map((u) => u.id), users.map((u) => u.id));
  assert.deepEqual(then[0].groups, [group.id]);
  const groups = await roster.history.groups(directory.id, { sequence: middle }).toArray();
  assert.deepEqual(groups.map((g) => g.members), [2]);
  const members = await roster.history.groupMembers(directory.id, group.id, { sequence: middle });
  assert.deepEqual([...members].sort(), [users[0].id, users[1].id].sort());
  const now = await roster.history.users(directory.id).toArray();
  assert.deepEqual(now.map((u) => u.id), [users[1].id, users[2].id]);

  const diff = await roster.history.diff(directory.id, { from: middle, pageLimit: 1 });
  assert.deepEqual(diff.users.deleted.map((u) => u.id), [users[0].id]);
  assert.deepEqual(diff.memberships.removed, [{ group_id: group.id, user_id: users[0].id }]);
  const everything = await roster.history.diff(directory.id, { from: 1, pageLimit: 1 });
  assert.equal(everything.users.created.length, 2);

  await assert.rejects(roster.history.users(directory.id, { sequence: 1000000 }).toArray(), BadRequestError);
  await assert.rejects(roster.history.diff("00000000-0000-0000-0000-000000000000", { from: 1 }), NotFoundError);
});
