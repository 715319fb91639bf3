/**
 * The results' types: Roster's own, from its OpenAPI document (generated/openapi.ts, openapi-typescript).
 * A result is the JSON object Roster sent: a field a newer Roster adds is there too, as it came.
 */

import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

export type Directory = Schemas["Directory"];
export type User = Schemas["User"];
export type Group = Schemas["Group"];
export type GroupDetail = Schemas["GroupDetail"];
export type Member = Schemas["Member"];
export type Change = Schemas["Change"];
export type ChangeDelivery = Schemas["ChangeDelivery"];
export type EventsSummary = Schemas["EventsSummary"];
export type Delivery = Schemas["Delivery"];
export type ScimRequest = Schemas["ScimRequest"];
export type ResendResult = Schemas["ResendResult"];
export type SetupLink = Schemas["SetupLink"];
export type NewSetupLink = Schemas["NewSetupLink"];
export type HeldChange = Schemas["HeldChange"];
export type ApprovedResult = Schemas["ApprovedResult"];
export type DiscardedResult = Schemas["DiscardedResult"];
export type Guard = Schemas["Guard"];
export type HistoryUser = Schemas["HistoryUser"];
export type HistoryGroup = Schemas["HistoryGroup"];
export type Diff = Schemas["Diff"];
export type DeprovisionGuardSetting = Schemas["DeprovisionGuardSetting"];
export type ScimOAuthInfo = Schemas["ScimOAuthInfo"];
export type ScimOAuthSecret = Schemas["ScimOAuthSecret"];
export type NewScimOAuthSecret = Schemas["NewScimOAuthSecret"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type NewWebhookEndpoint = Schemas["NewWebhookEndpoint"];
export type EndpointDelivery = Schemas["EndpointDelivery"];
export type EndpointTest = Schemas["EndpointTest"];
export type DirectoryType = Schemas["TypeEnum"];
export type EventType = Schemas["EventEnum"];

/** A webhook's payload: a feed item without `delivery`; `sequence` is absent on `dsync.*` events. */
export interface WebhookEvent {
  id: string;
  event: string;
  created_at: string;
  data: unknown;
  directory_id?: string;
  tenant?: string;
  product?: string;
  sequence?: number;
  previous_attributes?: unknown;
  [field: string]: unknown;
}
