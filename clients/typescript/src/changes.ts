/**
 * A directory's changes feed: read it, follow it, resend from it.
 *
 * Every event of a directory carries a `sequence`, 1, 2, 3… with no gap, and Roster's reads are gap-free. So
 * a follower that has applied event n asks for `after=n` and must get n+1 first: anything else means events it
 * can no longer read (Roster answers 410 once they are past retention), and it throws `ResyncRequired` rather
 * than go on past them. An application then resynchronises the directory from the user and group lists
 * (reading the directory's `events.last_sequence` first) and follows again from that number.
 */

import { GoneError, ResyncRequired } from "./errors.js";
import { type Sleep, type Transport, segment } from "./http.js";
import type { Change, ResendResult } from "./types.js";

const BASE = "/api/v1/directory-sync";
export const FEED_LIMIT_MAX = 1000; // what Roster serves at most per read

export interface FeedPosition {
  /** Events with a sequence above this one (default 0: from the first kept). */
  after?: number;
  /** Events per read, 1 to 1000 (default 100). */
  limit?: number;
}

export interface FollowOptions extends FeedPosition {
  /** Seconds between reads at the feed's head (default 2). */
  pollInterval?: number;
  /** Stops following: the iteration ends at its next read or wait. */
  signal?: AbortSignal;
}

export type ResendSelection = ({ fromSequence: number; toSequence: number } | { eventIds: string[] }) & {
  /** Send to this webhook endpoint only, instead of the directory's own webhook. */
  endpointId?: string;
};

function checkPosition(after: number, limit: number): void {
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= FEED_LIMIT_MAX)) {
    throw new RangeError(`limit must be from 1 to ${FEED_LIMIT_MAX}`);
  }
  if (!(Number.isInteger(after) && after >= 0)) throw new RangeError("after must be an integer, 0 or more");
}

export class Changes {
  constructor(
    private readonly transport: Transport,
    private readonly sleep: Sleep,
  ) {}

  /** One read: the events with a sequence above `after`, in order, at most `limit`. */
  async page(directoryId: string, { after = 0, limit = 100 }: FeedPosition = {}): Promise<Change[]> {
    checkPosition(after, limit);
    try {
      const envelope = await this.transport.call("GET", `${BASE}/${segment(directoryId)}/changes`, {
        query: { after, limit },
      });
      return (envelope.data ?? []) as Change[];
    } catch (error) {
      if (error instanceof GoneError) {
        throw new ResyncRequired(error.message, String(directoryId), after, error.status, error.requestId);
      }
      throw error;
    }
  }

  /** Every event after `after`, page by page, until the feed's head; then the iteration ends. Throws
   * ResyncRequired when the feed no longer holds what follows `after`, or shows a gap. */
  list(directoryId: string, { after = 0, limit = 100 }: FeedPosition = {}): AsyncIterable<Change> {
    checkPosition(after, limit);
    return this.read(directoryId, after, limit, null, undefined);
  }

  /** Every event after `after`, in order, then each new one as it comes: at the feed's head it reads again
   * every `pollInterval` seconds, until the caller stops iterating or `signal` aborts. Never skips an event:
   * a gap or a 410 throws ResyncRequired (its `after` is the last sequence yielded). */
  follow(directoryId: string, { after = 0, limit = 100, pollInterval = 2, signal }: FollowOptions = {}): AsyncIterable<Change> {
    checkPosition(after, limit);
    if (!(pollInterval >= 0)) throw new RangeError("pollInterval must be 0 or more");
    return this.read(directoryId, after, limit, pollInterval, signal);
  }

  private async *read(
    directoryId: string,
    after: number,
    limit: number,
    pollInterval: number | null,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<Change, void, undefined> {
    let position = after;
    while (!signal?.aborted) {
      const changes = await this.page(directoryId, { after: position, limit });
      for (const change of changes) {
        if (change.sequence !== position + 1) {
          throw new ResyncRequired(
            `the feed went from sequence ${position} to ${change.sequence}: resynchronise from the user and group lists`,
            String(directoryId),
            position,
          );
        }
        position = change.sequence;
        yield change;
      }
      if (changes.length < limit) {
        if (pollInterval === null || signal?.aborted) return;
        await this.sleep(pollInterval);
      }
    }
  }

  /** One more attempt of chosen events to the directory's current webhook: `fromSequence` to `toSequence`
   * (both included, at most 1000), or `eventIds`. Its `queued` counts them. */
  async resend(directoryId: string, selection: ResendSelection): Promise<ResendResult> {
    let body: Record<string, unknown>;
    if ("eventIds" in selection && selection.eventIds !== undefined) {
      if ("fromSequence" in selection || "toSequence" in selection) {
        throw new TypeError("give either fromSequence and toSequence, or eventIds");
      }
      body = { event_ids: selection.eventIds.map(String) };
    } else if ("fromSequence" in selection && selection.fromSequence != null && selection.toSequence != null) {
      body = { from: selection.fromSequence, to: selection.toSequence };
    } else {
      throw new TypeError("give fromSequence and toSequence, or eventIds");
    }
    if (selection.endpointId !== undefined) body.endpoint_id = String(selection.endpointId);
    const envelope = await this.transport.call("POST", `${BASE}/${segment(directoryId)}/changes/resend`, { body });
    return envelope.data as ResendResult;
  }
}
