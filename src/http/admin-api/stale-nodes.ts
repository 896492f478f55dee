// The answer of a per-profile listing (connection_list, connected_users): its JSON, and the
// nodes whose part of it is their last known state because they do not answer now, named in a
// header so a dashboard can tell a quiet node from a hung one.
import { jsonObjectOfProfiles, type ProfileListings } from '../../core/listings/index.js';
import { STALE_NODES_HEADER } from '../../protocol/admin-api.js';
import type { JsonPartsAnswer } from '../plumbing/route-response.js';

/** For the OpenAPI document. */
export const STALE_NODES_DOC = `A node that does not answer is not waited for: its connections are as it last answered (none if it never did), and the header ${STALE_NODES_HEADER} lists such nodes' numbers, comma-separated (for a key limited to some profiles, only those of nodes that serve one of them).`;

export function profileListingResponse(key: string, listings: ProfileListings): JsonPartsAnswer {
  const jsonParts = jsonObjectOfProfiles(key, listings.lists);
  if (listings.staleNodes.length === 0) return { status: 200, jsonParts };
  return { status: 200, jsonParts, headers: { [STALE_NODES_HEADER]: listings.staleNodes.join(',') } };
}
