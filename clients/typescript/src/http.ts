/**
 * The one place requests are made: the API key, the `{data, error}` envelope, errors, and bounded retries.
 *
 * Only 429 and 503 are retried: both mean Roster did not act on the request (too many requests; the database
 * unreachable), so sending it again is safe for every method. Each retry waits what `Retry-After` says
 * (seconds or an HTTP date), at most `maxRetryWait` seconds; without the header it backs off 0.5, 1, 2 …
 * seconds. Nothing else is retried: a timeout or a dropped connection may have reached Roster, and a second
 * POST could act twice.
 */

import { RosterError, errorFor } from "./errors.js";
import { VERSION } from "./version.js";

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;
export type Sleep = (seconds: number) => Promise<void>;
export type QueryValue = string | number | boolean | Date | null | undefined;

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  timeout: number;
  maxRetries: number;
  maxRetryWait: number;
  fetch: Fetch;
  sleep: Sleep;
}

export interface Envelope {
  data: unknown;
  error: unknown;
  [member: string]: unknown;
}

const RETRIED = new Set([429, 503]);

/** An id as one path segment (a slash or a question mark in it cannot reach another route). */
export function segment(value: string): string {
  return encodeURIComponent(String(value));
}

/** Roster's time format: UTC with milliseconds and Z, as Date.toISOString writes it. */
function queryValue(value: Exclude<QueryValue, null | undefined>): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "boolean") return value ? "true" : "false";
  return String(value);
}

/** Retry-After as seconds to wait (RFC 9110 §10.2.3: delay-seconds or an HTTP date); null if absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const when = Date.parse(text);
  if (Number.isNaN(when)) return null;
  return Math.max(0, (when - now) / 1000);
}

export class Transport {
  readonly baseUrl: string;
  private readonly options: TransportOptions;
  private readonly headers: Record<string, string>;

  constructor(options: TransportOptions) {
    if (!/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError("baseUrl must be an http or https address, such as https://roster.example.com");
    }
    if (!options.apiKey) throw new TypeError("an API key is needed: pass apiKey or set ROSTER_API_KEY");
    if (!(options.maxRetries >= 0)) throw new TypeError("maxRetries must be 0 or more");
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.headers = { Authorization: `Bearer ${options.apiKey}`, Accept: "application/json" };
    if (typeof (globalThis as { window?: unknown }).window === "undefined") {
      // Browsers refuse to let a page set User-Agent; elsewhere it names the client in Roster's logs.
      this.headers["User-Agent"] = `roster-client-typescript/${VERSION}`;
    }
  }

  /** One request, retried on 429/503; a 2xx answer's envelope, or the RosterError of its status. */
  async call(
    method: string,
    path: string,
    options: { query?: Record<string, QueryValue>; body?: unknown } = {},
  ): Promise<Envelope> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, queryValue(value));
    }
    const headers = { ...this.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        const signal = typeof AbortSignal.timeout === "function" ? AbortSignal.timeout(this.options.timeout * 1000) : undefined;
        response = await this.options.fetch(url.toString(), { method, headers, body, signal });
      } catch (error) {
        throw new RosterError(`no answer from Roster: ${(error as Error).message}`);
      }
      if (RETRIED.has(response.status) && attempt < this.options.maxRetries) {
        await response.body?.cancel();
        const wait = retryAfterSeconds(response.headers.get("Retry-After")) ?? 0.5 * 2 ** attempt;
        await this.options.sleep(Math.min(wait, this.options.maxRetryWait));
        continue;
      }
      return answer(response);
    }
  }
}

async function answer(response: Response): Promise<Envelope> {
  const requestId = response.headers.get("X-Request-Id");
  // No Content (RFC 9110 §15.3.5): a success without an envelope.
  if (response.status === 204) return { data: null, error: null };
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw errorFor(response.status, `unexpected answer: ${text.slice(0, 200) || response.statusText}`, requestId);
  }
  const envelope = parsed as Envelope;
  if (response.status < 200 || response.status >= 300) {
    const error = envelope.error as { message?: unknown } | null;
    const message = error && typeof error.message === "string" ? error.message : response.statusText;
    throw errorFor(response.status, message, requestId);
  }
  return envelope;
}
