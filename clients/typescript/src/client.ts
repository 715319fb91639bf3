/**
 * `Roster`: the client, and its directories, users and groups (setup links and held changes: directoryAdmin.ts).
 *
 * Every method is one request (lists: one per page, as they are read), through the one transport (http.ts:
 * the API key, errors, retries on 429/503). Results are Roster's JSON objects, typed from its OpenAPI
 * document (types.ts). A new namespace follows the same pattern: a class holding the transport, methods that
 * call one route each, and one property on `Roster`.
 */

import { Changes } from "./changes.js";
import { HeldChanges, SetupLinks } from "./directoryAdmin.js";
import { History } from "./history.js";
import { WebhookEndpoints } from "./webhookEndpoints.js";
import { type Fetch, type QueryValue, type Sleep, Transport, segment } from "./http.js";
import { Paged } from "./paging.js";
import type {
  Delivery,
  Directory,
  DirectoryType,
  Group,
  GroupDetail,
  NewScimOAuthSecret,
  ScimOAuthSecret,
  ScimRequest,
  User,
} from "./types.js";

const BASE = "/api/v1/directory-sync";

export interface DirectoryCreate {
  tenant: string;
  product: string;
  name?: string | null;
  type?: DirectoryType | null;
  webhookUrl?: string | null;
  webhookSecret?: string | null;
  /** How the directory's own webhook is signed: "roster" (default) or "standard" (needs a whsec_ secret). */
  webhookFormat?: "roster" | "standard" | null;
  logWebhookEvents?: boolean | null;
  logScimRequests?: boolean | null;
  /** SCIM requests per minute, 1500 to 600000; 0: no limit; null: the deployment's SCIM_RATE_LIMIT. */
  scimRateLimit?: number | null;
}

/** A partial deprovision guard setting, merged into the directory's current one. */
export interface DeprovisionGuardUpdate {
  enabled?: boolean;
  /** At least 1. */
  maxUsers?: number;
  /** 1 to 100 (100: counted, never held). */
  maxPercent?: number;
  /** 1 to 10080 (7 days). */
  windowMinutes?: number;
}

/** The fields to change; one left out stays as it is. `webhookUrl: null` removes the webhook;
 * `attributeMap: null` or `{}` clears the map (a map given replaces the whole map). `staticSecretEnabled: false`
 * leaves OAuth access tokens as the only way into the SCIM endpoint (a ConflictError while OAuth has no
 * client secret). */
export interface DirectoryUpdate {
  name?: string;
  webhookUrl?: string | null;
  webhookSecret?: string | null;
  webhookFormat?: "roster" | "standard";
  logWebhookEvents?: boolean;
  logScimRequests?: boolean;
  deactivated?: boolean;
  attributeMap?: Record<string, string> | null;
  roleMap?: Record<string, string> | null;
  deprovisionGuard?: DeprovisionGuardUpdate;
  staticSecretEnabled?: boolean;
  /** SCIM requests per minute, 1500 to 600000; 0: no limit; null: the deployment's SCIM_RATE_LIMIT. */
  scimRateLimit?: number | null;
}

export interface TenantProduct {
  tenant: string;
  product: string;
}

export interface PageOptions {
  /** Items per request, 1 to 1000 (default 100). */
  pageLimit?: number;
}

/** The filters of a user list, of a tenant and product or of one directory. */
export interface DirectoryUserFilters extends PageOptions {
  active?: boolean;
  email?: string;
  group?: string;
  /** Strictly after, at the millisecond Roster shows: the newest `updated_at` seen can be passed back as is. */
  updatedAfter?: string | Date;
}

export interface UserFilters extends TenantProduct, DirectoryUserFilters {
  directoryId?: string;
}

/** The filter of a group list, of a tenant and product or of one directory. */
export interface DirectoryGroupFilters extends PageOptions {
  name?: string;
}

export interface GroupFilters extends TenantProduct, DirectoryGroupFilters {
  directoryId?: string;
}

export interface LogFilters extends PageOptions {
  failed?: boolean;
}

/** The request body: camelCase names as Roster's (snake_case) fields; a name given in Roster's form passes as is. */
function wireBody(fields: object): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined) body[name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = value;
  }
  return body;
}

export class Directories {
  constructor(private readonly transport: Transport) {}

  /** A new directory, with its SCIM endpoint and secret (a field left out or null: Roster's default). */
  async create(input: DirectoryCreate): Promise<Directory> {
    const body = Object.fromEntries(Object.entries(wireBody(input)).filter(([, value]) => value !== null));
    return (await this.transport.call("POST", BASE, { body })).data as Directory;
  }

  async get(directoryId: string): Promise<Directory> {
    return (await this.transport.call("GET", `${BASE}/${segment(directoryId)}`)).data as Directory;
  }

  /** The tenant and product's directories, oldest first, every page. */
  list({ tenant, product, pageLimit }: TenantProduct & PageOptions): Paged<Directory> {
    return new Paged(this.transport, BASE, { tenant, product }, pageLimit);
  }

  async update(directoryId: string, changes: DirectoryUpdate): Promise<Directory> {
    const { deprovisionGuard, ...fields } = changes;
    const body = wireBody(fields);
    if (deprovisionGuard !== undefined) body.deprovision_guard = wireBody(deprovisionGuard);
    return (await this.transport.call("PATCH", `${BASE}/${segment(directoryId)}`, { body })).data as Directory;
  }

  /** Delete the directory with its users, groups and logs. */
  async delete(directoryId: string): Promise<void> {
    await this.transport.call("DELETE", `${BASE}/${segment(directoryId)}`);
  }

  /** A new SCIM secret (in `scim.secret`); the previous one keeps working `graceSeconds`. */
  async rotateScimSecret(directoryId: string, { graceSeconds = 0 }: { graceSeconds?: number } = {}): Promise<Directory> {
    const path = `${BASE}/${segment(directoryId)}/scim-secret`;
    return (await this.transport.call("POST", path, { body: { grace_seconds: graceSeconds } })).data as Directory;
  }

  /** End the grace a rotation gave the previous SCIM secret, now. */
  async revokePreviousScimSecret(directoryId: string): Promise<Directory> {
    const path = `${BASE}/${segment(directoryId)}/scim-secret/previous`;
    return (await this.transport.call("DELETE", path)).data as Directory;
  }

  /** A new OAuth client secret for the SCIM endpoint (in `scim.oauth.client_secret`, only in this answer);
   * access tokens issued with the previous one stop working at once. */
  async rotateScimOauthSecret(directoryId: string): Promise<Directory> {
    const path = `${BASE}/${segment(directoryId)}/scim-oauth-secret`;
    return (await this.transport.call("POST", path)).data as Directory;
  }

  /** The OAuth client secrets of the SCIM endpoint, newest first (expired ones too), never their value. */
  async scimOauthSecrets(directoryId: string): Promise<ScimOAuthSecret[]> {
    const path = `${BASE}/${segment(directoryId)}/scim-oauth-secrets`;
    return (await this.transport.call("GET", path)).data as ScimOAuthSecret[];
  }

  /** Another OAuth client secret (its `client_secret` in this answer only), working `expiresInDays` days
   * (left out: Roster's default, 365); the others keep working. A ConflictError past 5 unexpired secrets. */
  async addScimOauthSecret(directoryId: string, { expiresInDays }: { expiresInDays?: number } = {}): Promise<NewScimOAuthSecret> {
    const path = `${BASE}/${segment(directoryId)}/scim-oauth-secrets`;
    const body = expiresInDays === undefined ? {} : { expires_in_days: expiresInDays };
    return (await this.transport.call("POST", path, { body })).data as NewScimOAuthSecret;
  }

  /** The secret, and the access tokens it obtained, stop working at once; the other secrets' do not. */
  async revokeScimOauthSecret(directoryId: string, secretId: string): Promise<void> {
    await this.transport.call("DELETE", `${BASE}/${segment(directoryId)}/scim-oauth-secrets/${segment(secretId)}`);
  }

  /** The webhook delivery log (kept while `log_webhook_events` is on), oldest first. */
  deliveries(directoryId: string, { failed, status, pageLimit }: LogFilters & { status?: "delivered" | "failed" } = {}): Paged<Delivery> {
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/events`, { failed, status }, pageLimit);
  }

  /** The SCIM request log, newest first. */
  scimRequests(directoryId: string, { failed, status, pageLimit }: LogFilters & { status?: number } = {}): Paged<ScimRequest> {
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/scim-requests`, { failed, status }, pageLimit);
  }

  /** The directory's users, oldest first, every page, fetched as read; the filters of `users.list`. */
  users(directoryId: string, { active, email, group, updatedAfter, pageLimit }: DirectoryUserFilters = {}): Paged<User> {
    const query: Record<string, QueryValue> = { active, email, group, updatedAfter };
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/users`, query, pageLimit);
  }

  /** The directory's groups, oldest first, without members. */
  groups(directoryId: string, { name, pageLimit }: DirectoryGroupFilters = {}): Paged<Group> {
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/groups`, { name }, pageLimit);
  }
}

export class Users {
  constructor(private readonly transport: Transport) {}

  /** The tenant and product's users (or one directory's), oldest first, every page, fetched as read. */
  list({ tenant, product, directoryId, active, email, group, updatedAfter, pageLimit }: UserFilters): Paged<User> {
    const query: Record<string, QueryValue> = { tenant, product, directoryId, active, email, group, updatedAfter };
    return new Paged(this.transport, `${BASE}/users`, query, pageLimit);
  }

  async get(userId: string, { tenant, product }: TenantProduct): Promise<User> {
    const path = `${BASE}/users/${segment(userId)}`;
    return (await this.transport.call("GET", path, { query: { tenant, product } })).data as User;
  }

  /** The groups the user is a member of (without members), oldest first. */
  groups(userId: string, { tenant, product, pageLimit }: TenantProduct & PageOptions): Paged<Group> {
    return new Paged(this.transport, `${BASE}/users/${segment(userId)}/groups`, { tenant, product }, pageLimit);
  }
}

export class Groups {
  constructor(private readonly transport: Transport) {}

  /** The tenant and product's groups (or one directory's), oldest first, without members. */
  list({ tenant, product, directoryId, name, pageLimit }: GroupFilters): Paged<Group> {
    return new Paged(this.transport, `${BASE}/groups`, { tenant, product, directoryId, name }, pageLimit);
  }

  /** The group with its `members`. */
  async get(groupId: string, { tenant, product }: TenantProduct): Promise<GroupDetail> {
    const path = `${BASE}/groups/${segment(groupId)}`;
    return (await this.transport.call("GET", path, { query: { tenant, product } })).data as GroupDetail;
  }
}

export interface RosterOptions {
  /** Roster's address, e.g. https://roster.example.com (default: the ROSTER_URL environment variable). */
  baseUrl?: string;
  /** An API key (default: ROSTER_API_KEY). */
  apiKey?: string;
  /** Seconds one request may take (default 30). */
  timeout?: number;
  /** Retries of a request answered 429 or 503 (default 3). */
  maxRetries?: number;
  /** The longest wait before a retry, in seconds, whatever Retry-After says (default 60). */
  maxRetryWait?: number;
  /** A fetch of your own (default: the global fetch). */
  fetch?: Fetch;
  /** What waits between retries and feed polls, in seconds (default: a timer). */
  sleep?: Sleep;
}

function environment(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name] || undefined;
}

const timer: Sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** A client of one Roster: `new Roster({ baseUrl: "https://roster.example.com", apiKey: "..." })`. */
export class Roster {
  readonly directories: Directories;
  readonly users: Users;
  readonly groups: Groups;
  readonly changes: Changes;
  readonly setupLinks: SetupLinks;
  readonly heldChanges: HeldChanges;
  readonly history: History;
  readonly webhookEndpoints: WebhookEndpoints;
  readonly baseUrl: string;

  constructor(options: RosterOptions = {}) {
    const sleep = options.sleep ?? timer;
    const transport = new Transport({
      baseUrl: options.baseUrl ?? environment("ROSTER_URL") ?? "",
      apiKey: options.apiKey ?? environment("ROSTER_API_KEY") ?? "",
      timeout: options.timeout ?? 30,
      maxRetries: options.maxRetries ?? 3,
      maxRetryWait: options.maxRetryWait ?? 60,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      sleep,
    });
    this.baseUrl = transport.baseUrl;
    this.directories = new Directories(transport);
    this.users = new Users(transport);
    this.groups = new Groups(transport);
    this.changes = new Changes(transport, sleep);
    this.setupLinks = new SetupLinks(transport);
    this.heldChanges = new HeldChanges(transport);
    this.history = new History(transport);
    this.webhookEndpoints = new WebhookEndpoints(transport);
  }
}
