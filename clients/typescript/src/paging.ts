/**
 * Lists that fetch their pages as they are read: `for await (const user of roster.users.list(...))`.
 *
 * A `Paged` walks a list route with `pageOffset`/`pageLimit` (Roster's stable, oldest-first order), one page
 * per request and only when iteration needs it, until a page comes back short. Each iteration walks the
 * list again from its first page; `toArray()` reads every page.
 */

import type { QueryValue, Transport } from "./http.js";

export const PAGE_LIMIT_MAX = 1000; // what Roster serves at most per page

export class Paged<T> implements AsyncIterable<T> {
  private readonly transport: Transport;
  private readonly path: string;
  private readonly query: Record<string, QueryValue>;
  private readonly pageLimit: number;

  constructor(transport: Transport, path: string, query: Record<string, QueryValue>, pageLimit = 100) {
    if (!(Number.isInteger(pageLimit) && pageLimit >= 1 && pageLimit <= PAGE_LIMIT_MAX)) {
      throw new RangeError(`pageLimit must be from 1 to ${PAGE_LIMIT_MAX}`);
    }
    this.transport = transport;
    this.path = path;
    this.query = query;
    this.pageLimit = pageLimit;
  }

  async *pages(): AsyncGenerator<T[], void, undefined> {
    for (let offset = 0; ; ) {
      const query = { ...this.query, pageOffset: offset, pageLimit: this.pageLimit };
      const envelope = await this.transport.call("GET", this.path, { query });
      const items = (envelope.data ?? []) as T[];
      if (items.length) yield items;
      if (items.length < this.pageLimit) return;
      offset += items.length;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page;
  }

  /** Every item, every page read. */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
