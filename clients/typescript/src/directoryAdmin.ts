/**
 * A directory's setup links (`roster.setupLinks`) and the changes its deprovision guard holds
 * (`roster.heldChanges`): what an application does for its customers' IT admins and its operators, one route
 * per method, like client.ts's namespaces.
 */

import { type Transport, segment } from "./http.js";
import { Paged } from "./paging.js";
import type { ApprovedResult, DiscardedResult, HeldChange, NewSetupLink, SetupLink } from "./types.js";

const BASE = "/api/v1/directory-sync";

export interface SetupLinkCreate {
  /** Seconds the link works, 300 to 2592000 (default: Roster's, 3 days). */
  expiresIn?: number;
  /** Where the page's "Done" link goes (an https URL). */
  returnUrl?: string | null;
  /** Whether the page lets the IT admin edit the attribute and role maps (default false). */
  allowMapping?: boolean;
}

export class SetupLinks {
  constructor(private readonly transport: Transport) {}

  /** A link the customer's IT admin opens to connect their identity provider. Its `url` is in this answer only. */
  async create(directoryId: string, { expiresIn, returnUrl, allowMapping }: SetupLinkCreate = {}): Promise<NewSetupLink> {
    const body: Record<string, unknown> = {};
    if (expiresIn !== undefined) body.expires_in = expiresIn;
    if (returnUrl !== undefined && returnUrl !== null) body.return_url = returnUrl;
    if (allowMapping !== undefined) body.allow_mapping = allowMapping;
    const path = `${BASE}/${segment(directoryId)}/setup-links`;
    return (await this.transport.call("POST", path, { body })).data as NewSetupLink;
  }

  /** The directory's links with their status (never their token). */
  list(directoryId: string, { pageLimit }: { pageLimit?: number } = {}): Paged<SetupLink> {
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/setup-links`, {}, pageLimit);
  }

  /** The link stops working at once, on every node. */
  async revoke(directoryId: string, linkId: string): Promise<void> {
    await this.transport.call("DELETE", `${BASE}/${segment(directoryId)}/setup-links/${segment(linkId)}`);
  }
}

export class HeldChanges {
  constructor(private readonly transport: Transport) {}

  /** What the tripped guard holds, in the order it was held (and is applied on approval). */
  list(directoryId: string, { pageLimit }: { pageLimit?: number } = {}): Paged<HeldChange> {
    return new Paged(this.transport, `${BASE}/${segment(directoryId)}/held-changes`, {}, pageLimit);
  }

  /** Apply the held changes named (none named: all of them); each produces its event now, with `held_since`. */
  async approve(directoryId: string, ids?: string[]): Promise<ApprovedResult> {
    const path = `${BASE}/${segment(directoryId)}/held-changes/approve`;
    return (await this.transport.call("POST", path, { body: which(ids) })).data as ApprovedResult;
  }

  /** Drop the held changes named (none named: all of them): the application never sees them. */
  async discard(directoryId: string, ids?: string[]): Promise<DiscardedResult> {
    const path = `${BASE}/${segment(directoryId)}/held-changes/discard`;
    return (await this.transport.call("POST", path, { body: which(ids) })).data as DiscardedResult;
  }
}

function which(ids: string[] | undefined): Record<string, unknown> {
  if (ids === undefined) return {};
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new TypeError("ids must be a non-empty array of held change ids, or left out for all of them");
  }
  return { ids };
}
