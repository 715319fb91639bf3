/**
 * Roster's TypeScript client: its REST API, its changes feed and its webhooks.
 *
 *     import { Roster } from "@roster/client";
 *     const roster = new Roster({ baseUrl: "https://roster.example.com", apiKey: "..." });
 *     for await (const user of roster.users.list({ tenant: "acme", product: "crm" })) console.log(user.email);
 */

export { Roster } from "./client.js";
export type {
  DeprovisionGuardUpdate,
  DirectoryCreate,
  DirectoryGroupFilters,
  DirectoryUpdate,
  DirectoryUserFilters,
  GroupFilters,
  LogFilters,
  PageOptions,
  RosterOptions,
  TenantProduct,
  UserFilters,
} from "./client.js";
export { Directories, Groups, Users } from "./client.js";
export { Changes } from "./changes.js";
export { HeldChanges, SetupLinks } from "./directoryAdmin.js";
export { History, type HistoryPoint } from "./history.js";
export type { SetupLinkCreate } from "./directoryAdmin.js";
export { WebhookEndpoints } from "./webhookEndpoints.js";
export type { WebhookEndpointCreate, WebhookEndpointFilters, WebhookEndpointUpdate } from "./webhookEndpoints.js";
export type { FeedPosition, FollowOptions, ResendSelection } from "./changes.js";
export {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  GoneError,
  NotFoundError,
  ResyncRequired,
  RosterError,
  WebhookVerificationError,
} from "./errors.js";
export type { WebhookVerificationReason } from "./errors.js";
export type { Fetch, Sleep } from "./http.js";
export { retryAfterSeconds } from "./http.js";
export { Paged } from "./paging.js";
export type {
  ApprovedResult,
  Change,
  ChangeDelivery,
  DeprovisionGuardSetting,
  Delivery,
  Diff,
  Directory,
  DirectoryType,
  DiscardedResult,
  EndpointDelivery,
  EndpointTest,
  EventType,
  EventsSummary,
  Group,
  GroupDetail,
  Guard,
  HeldChange,
  HistoryGroup,
  HistoryUser,
  Member,
  NewScimOAuthSecret,
  NewSetupLink,
  NewWebhookEndpoint,
  ResendResult,
  ScimOAuthInfo,
  ScimOAuthSecret,
  ScimRequest,
  SetupLink,
  User,
  WebhookEndpoint,
  WebhookEvent,
} from "./types.js";
export {
  DEFAULT_TOLERANCE,
  SEQUENCE_HEADER,
  SIGNATURE_HEADER,
  verifySignature,
  verifyStandard,
  verifyWebhook,
} from "./webhooks.js";
export type { VerifyOptions } from "./webhooks.js";
export { VERSION } from "./version.js";
