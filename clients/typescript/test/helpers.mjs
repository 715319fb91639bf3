// Shared by the tests: the live Roster they run against (ROSTER_URL, ROSTER_API_KEY, set by Roster's test suite,
// tests/clients/typescript), SCIM writes as an identity provider makes them, and a scripted local server for
// what a live Roster cannot be made to answer (429, 503, a purged feed, a gap).
import { createServer } from "node:http";

export const TENANT = "acme";
export const PRODUCT = "crm";

export function live() {
  const baseUrl = process.env.ROSTER_URL;
  const apiKey = process.env.ROSTER_API_KEY;
  if (!baseUrl || !apiKey) throw new Error("ROSTER_URL and ROSTER_API_KEY must name a live Roster");
  return { baseUrl, apiKey };
}

/** A tenant of its own for each test, so tests do not see each other's directories. */
export function tenant(name) {
  return `${TENANT}-${name}-${Math.random().toString(36).slice(2, 8)}`;
}

export async function scim(directory, method, path, body) {
  const response = await fetch(`${live().baseUrl}/api/scim/v2.0/${directory.id}${path}`, {
    method,
    headers: { Authorization: `Bearer ${directory.scim.secret}`, "Content-Type": "application/scim+json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status >= 300) throw new Error(`SCIM ${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? {} : response.json();
}

export function scimUser(directory, userName, fields = {}) {
  return scim(directory, "POST", "/Users", {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
    userName,
    ...fields,
  });
}

/** Records what fetch asked for, then asks it. */
export function countingFetch() {
  const requests = [];
  const fetchImpl = (url, init) => {
    requests.push({ url: new URL(url), method: init.method });
    return fetch(url, init);
  };
  return { requests, fetch: fetchImpl };
}

export const ok = (data, extra = {}) => ({ status: 200, body: { data, error: null, ...extra } });
export const failed = (status, message = "try later", headers = {}) => ({
  status,
  body: { data: null, error: { message, code: status } },
  headers,
});

/** A scripted server on 127.0.0.1: each request gets the next answer (the last one repeats). */
export async function fakeRoster(...answers) {
  const requests = [];
  const server = createServer((request, response) => {
    requests.push({ method: request.method, url: request.url });
    const answer = answers.length > 1 ? answers.shift() : answers[0];
    const body = answer.status === 204 ? "" : JSON.stringify(answer.body);
    response.writeHead(answer.status, {
      "Content-Type": "application/json",
      "X-Request-Id": "fake-1",
      ...(answer.headers ?? {}),
    });
    response.end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

export function feedItem(sequence, directoryId) {
  return {
    id: `00000000-0000-4000-8000-${String(sequence).padStart(12, "0")}`,
    event: "user.created",
    created_at: "2030-01-01T00:00:00.000Z",
    sequence,
    directory_id: directoryId,
    tenant: TENANT,
    product: PRODUCT,
    data: { id: `user-${sequence}` },
    delivery: { status: "delivered", attempts: 1, last_attempt_at: null, status_code: 200 },
  };
}
