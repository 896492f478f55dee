// Queries on `oauth_authorizations`. Nothing in the portal creates these yet (there is no
// OAuth server); the Admin API can still delete them, as the specification asks.
import type { UserId } from '../shared/ids.js';
import type { Db } from './database.js';

/** Returns how many were deleted. */
export async function deleteAuthorizationsOfUser(db: Db, userId: UserId): Promise<number> {
  const result = await db.deleteFrom('oauth_authorizations').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deletes authorizations that expired before `before` (ATOM); returns how many. */
export async function deleteExpiredAuthorizations(db: Db, before: string): Promise<number> {
  const result = await db.deleteFrom('oauth_authorizations').where('expires_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
