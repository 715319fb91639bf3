/**
 * A directory's history (`roster.history`, contract §5.3): its users, groups and a group's members as they
 * were at a moment or after an event number, and what changed between two points. One route per method,
 * like client.ts's namespaces.
 *
 * A point is `at` (a Date or an ISO 8601 string) or `sequence` (an event number); neither means now.
 */

import { type QueryValue, type Transport, segment } from "./http.js";
import { PAGE_LIMIT_MAX, Paged } from "./paging.js";
import type { Diff, HistoryGroup, HistoryUser } from "./types.js";

const BASE = "/api/v1/directory-sync";

export interface HistoryPoint {
  at?: Date | string;
  sequence?: number;
  pageLimit?: number;
}

function point({ at, sequence }: HistoryPoint): Record<string, QueryValue> {
  if (at !== undefined && sequence !== undefined) throw new TypeError("give at or sequence, not both");
  return { at, sequence };
}

export class History {
  constructor(private readonly transport: Transport) {}

  /** The directory's users at the point, oldest first, each with `groups` (ids) as they were then. */
  users(directoryId: string, options: HistoryPoint & { active?: boolean } = {}): Paged<HistoryUser> {
    const query = { ...point(options), active: options.active };
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/history/users`, query, options.pageLimit);
  }

  /** The directory's groups at the point, oldest first, each with `members` (a count) then. */
  groups(directoryId: string, options: HistoryPoint = {}): Paged<HistoryGroup> {
    const path = `${BASE}/${segment(directoryId)}/history/groups`;
    return new Paged(this.transport, path, point(options), options.pageLimit);
  }

  /** The ids of the users in the group at the point, in the order they joined (every page read). */
  async groupMembers(directoryId: string, groupId: string, options: HistoryPoint = {}): Promise<string[]> {
    const pageLimit = options.pageLimit ?? PAGE_LIMIT_MAX;
    const path = `${BASE}/${segment(directoryId)}/history/groups/${segment(groupId)}/members`;
    const members: string[] = [];
    for (;;) {
      const query = { ...point(options), pageOffset: members.length, pageLimit };
      const page = ((await this.transport.call("GET", path, { query })).data ?? []) as string[];
      members.push(...page);
      if (page.length < pageLimit) return members;
    }
  }

  /** The diff's pages, each with its share of the lists, following `next` to the last. */
  async *diffPages(
    directoryId: string,
    { from, to, pageLimit = PAGE_LIMIT_MAX }: { from: Date | string | number; to?: Date | string | number; pageLimit?: number },
  ): AsyncGenerator<Diff, void, undefined> {
    const path = `${BASE}/${segment(directoryId)}/diff`;
    let query: Record<string, QueryValue> = { from, to, pageLimit };
    for (;;) {
      const data = (await this.transport.call("GET", path, { query })).data as Diff;
      yield data;
      if (!data.next) return;
      query = { cursor: data.next, pageLimit };
    }
  }

  /**
   * The net change from `from` to `to` (default: now), a time or an event number each, every page read and
   * joined: users and groups created, deleted and updated (before/after), memberships added and removed.
   */
  async diff(
    directoryId: string,
    options: { from: Date | string | number; to?: Date | string | number; pageLimit?: number },
  ): Promise<Diff> {
    const joined: Diff = {
      users: { created: [], deleted: [], updated: [] },
      groups: { created: [], deleted: [], updated: [] },
      memberships: { added: [], removed: [] },
      next: null,
    };
    for await (const page of this.diffPages(directoryId, options)) {
      for (const part of ["users", "groups"] as const) {
        joined[part].created.push(...(page[part].created as never[]));
        joined[part].deleted.push(...(page[part].deleted as never[]));
        joined[part].updated.push(...page[part].updated);
      }
      joined.memberships.added.push(...page.memberships.added);
      joined.memberships.removed.push(...page.memberships.removed);
    }
    return joined;
  }
}
