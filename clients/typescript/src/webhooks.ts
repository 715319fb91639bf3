/**
 * Verify a Roster webhook: `await verifyWebhook({ body, signature, secret })` gives the event.
 *
 * The header is `Roster-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(key=webhook secret, msg="<t>.<body>")>`.
 * Pass the raw body exactly as received (a string or its bytes): parsing and re-serialising the JSON changes
 * it and the signature no longer matches. The timestamp is inside the signed message, so a captured delivery
 * cannot be replayed later with a fresh `t`; the tolerance bounds how old (or how far ahead) `t` may be.
 * The check uses WebCrypto (`crypto.subtle`, in browsers and Node 18+), whose HMAC verify compares in constant
 * time.
 */

import { WebhookVerificationError } from "./errors.js";
import type { WebhookEvent } from "./types.js";

export const SIGNATURE_HEADER = "Roster-Signature";
export const SEQUENCE_HEADER = "Roster-Event-Sequence";
export const DEFAULT_TOLERANCE = 300; // seconds

export interface VerifyOptions {
  /** The raw body, as received. */
  body: string | Uint8Array | ArrayBuffer;
  /** The `Roster-Signature` header's value. */
  signature: string | null | undefined;
  /** The directory's webhook secret. */
  secret: string;
  /** Seconds `t` may be from now, either way (default 300). */
  tolerance?: number;
  /** Unix seconds to check against (for tests; default now). */
  now?: number;
}

async function subtle(): Promise<SubtleCrypto> {
  const global = (globalThis as { crypto?: Crypto }).crypto;
  if (global?.subtle) return global.subtle;
  // Node 18 keeps WebCrypto in its crypto module (the global came in Node 19); the name is computed so that
  // a bundler for browsers, which have the global, does not try to include the module.
  const moduleName = "node:crypto";
  const node = (await import(/* @vite-ignore */ moduleName)) as { webcrypto: Crypto };
  return node.webcrypto.subtle;
}

function bytesOf(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return new TextEncoder().encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function parse(header: string | null | undefined): { timestamp: number; signatures: string[] } {
  if (!header || typeof header !== "string") {
    throw new WebhookVerificationError(`Missing ${SIGNATURE_HEADER} header.`, "malformed");
  }
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) {
      throw new WebhookVerificationError(`${SIGNATURE_HEADER} must look like t=<unix seconds>,s=<hex>.`, "malformed");
    }
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "t") {
      if (!/^[0-9]+$/.test(value)) {
        throw new WebhookVerificationError(`${SIGNATURE_HEADER} t= must be whole unix seconds.`, "malformed");
      }
      timestamp = Number(value);
    } else if (key === "s") {
      signatures.push(value.toLowerCase());
    }
    // Other keys are ignored, so that a later scheme can be sent beside this one.
  }
  if (timestamp === null || signatures.length === 0) {
    throw new WebhookVerificationError(`${SIGNATURE_HEADER} needs both t= and s=.`, "malformed");
  }
  return { timestamp, signatures };
}

function hexBytes(hex: string) {
  if (!/^[0-9a-f]{64}$/.test(hex)) return null;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** Check the header against the raw body; resolves to the signed timestamp. */
export async function verifySignature(options: VerifyOptions): Promise<number> {
  const { secret, tolerance = DEFAULT_TOLERANCE } = options;
  if (!secret) throw new WebhookVerificationError("No webhook secret to verify with.", "secret");
  const { timestamp, signatures } = parse(options.signature);
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      `${SIGNATURE_HEADER} timestamp is ${Math.trunc(now - timestamp)} s from now; tolerance is ${tolerance} s.`,
      "timestamp",
    );
  }
  const crypto = await subtle();
  const encoder = new TextEncoder();
  const key = await crypto.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const body = bytesOf(options.body);
  const message = new Uint8Array(String(timestamp).length + 1 + body.length);
  message.set(encoder.encode(`${timestamp}.`));
  message.set(body, String(timestamp).length + 1);
  let matched = false;
  // Every candidate is checked, without stopping at a match, so the timing does not tell which one was close.
  for (const candidate of signatures) {
    const bytes = hexBytes(candidate);
    if (bytes !== null && (await crypto.verify("HMAC", key, bytes, message))) matched = true;
  }
  if (!matched) {
    throw new WebhookVerificationError(`${SIGNATURE_HEADER} does not match the body and secret.`, "mismatch");
  }
  return timestamp;
}

/** Verify a delivery and return its event. Throws WebhookVerificationError: answer 400 and do not use the body. */
export async function verifyWebhook(options: VerifyOptions): Promise<WebhookEvent> {
  await verifySignature(options);
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(bytesOf(options.body)));
  } catch {
    throw new WebhookVerificationError("The signed body is not JSON.", "body");
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload) || typeof (payload as { id?: unknown }).id !== "string") {
    throw new WebhookVerificationError("The signed body is not a Roster event.", "body");
  }
  return payload as WebhookEvent;
}
