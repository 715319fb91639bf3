/**
 * `roster.webhookEndpoints`: destinations beside each directory's own webhook (Roster's contract §5.2), each
 * with its events, its tenant/product/directory filters and its signature format. One route per method.
 */

import { type Transport, segment } from "./http.js";
import { Paged } from "./paging.js";
import type { EndpointDelivery, EndpointTest, NewWebhookEndpoint, WebhookEndpoint } from "./types.js";

const BASE = "/api/v1/webhook-endpoints";

export interface WebhookEndpointCreate {
  url: string;
  /** Event names, or ["*"] (the default) for all of them. */
  events?: string[];
  description?: string;
  /** Filters: null or absent matches any. */
  tenant?: string | null;
  product?: string | null;
  directoryId?: string | null;
  /** "roster" (default): the Roster-Signature header; "standard": Standard Webhooks v1. */
  format?: "roster" | "standard";
  enabled?: boolean;
  /** Given, or generated as whsec_<base64>. */
  secret?: string;
}

export type WebhookEndpointUpdate = Partial<Omit<WebhookEndpointCreate, "secret">>;

export interface WebhookEndpointFilters {
  tenant?: string;
  product?: string;
  directoryId?: string;
  enabled?: boolean;
  pageLimit?: number;
}

function fields(input: WebhookEndpointUpdate & { secret?: string }): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const names: [keyof typeof input, string][] = [
    ["url", "url"],
    ["events", "events"],
    ["description", "description"],
    ["tenant", "tenant"],
    ["product", "product"],
    ["directoryId", "directory_id"],
    ["format", "format"],
    ["enabled", "enabled"],
    ["secret", "secret"],
  ];
  for (const [name, field] of names) if (input[name] !== undefined) body[field] = input[name];
  return body;
}

export class WebhookEndpoints {
  constructor(private readonly transport: Transport) {}

  /** A new endpoint; its `secret` is in this answer only. */
  async create(input: WebhookEndpointCreate): Promise<NewWebhookEndpoint> {
    return (await this.transport.call("POST", BASE, { body: fields(input) })).data as NewWebhookEndpoint;
  }

  /** Every endpoint, oldest first; a filter keeps the endpoints whose own filter equals it. */
  list({ tenant, product, directoryId, enabled, pageLimit }: WebhookEndpointFilters = {}): Paged<WebhookEndpoint> {
    return new Paged(this.transport, BASE, { tenant, product, directory_id: directoryId, enabled }, pageLimit);
  }

  async get(endpointId: string): Promise<WebhookEndpoint> {
    return (await this.transport.call("GET", `${BASE}/${segment(endpointId)}`)).data as WebhookEndpoint;
  }

  /** Change the given fields only; applies to events recorded after the change. */
  async update(endpointId: string, changes: WebhookEndpointUpdate): Promise<WebhookEndpoint> {
    const path = `${BASE}/${segment(endpointId)}`;
    return (await this.transport.call("PATCH", path, { body: fields(changes) })).data as WebhookEndpoint;
  }

  async delete(endpointId: string): Promise<void> {
    await this.transport.call("DELETE", `${BASE}/${segment(endpointId)}`);
  }

  /** A new secret (in this answer only); a standard endpoint signs with both for `graceSeconds`. */
  async rotateSecret(
    endpointId: string,
    { graceSeconds = 0, secret, format }: { graceSeconds?: number; secret?: string; format?: "roster" | "standard" } = {},
  ): Promise<NewWebhookEndpoint> {
    const body: Record<string, unknown> = { grace_seconds: graceSeconds };
    if (secret !== undefined) body.secret = secret;
    if (format !== undefined) body.format = format;
    const path = `${BASE}/${segment(endpointId)}/secret`;
    return (await this.transport.call("POST", path, { body })).data as NewWebhookEndpoint;
  }

  /** Send one `webhook.test` event now; the receiver's outcome. */
  async test(endpointId: string): Promise<EndpointTest> {
    return (await this.transport.call("POST", `${BASE}/${segment(endpointId)}/test`)).data as EndpointTest;
  }

  /** The endpoint's deliveries, oldest first; `failed: true` keeps the failed and dropped ones. */
  deliveries(endpointId: string, { failed, pageLimit }: { failed?: boolean; pageLimit?: number } = {}): Paged<EndpointDelivery> {
    return new Paged(this.transport, `${BASE}/${segment(endpointId)}/deliveries`, { failed }, pageLimit);
  }
}
