// Queries on `oauth_authorizations`. Nothing in the portal creates these (there is no OAuth
// server); the eduVPN import brings the ones its configurations name, and the Admin API can
// delete them, as the specification asks.
import type { Transaction } from 'kysely';
import type { UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';
import type { Database } from './schema.js';

export interface Authorization {
  readonly authKey: string;
  readonly userId: UserId;
  readonly clientId: string;
  readonly scope: string;
  readonly authorizedAt: string;
  readonly expiresAt: string;
}

/** Rows of one multi-row insert: well inside both databases' limits on parameters. */
const IMPORT_ROWS = 500;

/** Returns how many were deleted. */
export async function deleteAuthorizationsOfUser(db: Db, userId: UserId): Promise<number> {
  const result = await authorizationsOfUserDeletion(db, userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The statement deleteAuthorizationsOfUser runs, for a statement of several (src/storage/user-access.ts). */
export function authorizationsOfUserDeletion(db: Db, userId: UserId) {
  return db.deleteFrom('oauth_authorizations').where('user_id', '=', userId);
}

/** Deletes authorizations that expired before `before` (ATOM); returns how many. */
export async function deleteExpiredAuthorizations(db: Db, before: string): Promise<number> {
  const result = await db.deleteFrom('oauth_authorizations').where('expires_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The stored authorizations among these keys. */
export async function authorizationsWithKeys(db: Db, authKeys: readonly string[]): Promise<Authorization[]> {
  const found: Authorization[] = [];
  for (const keys of sizeLimitedGroups(authKeys, () => 1, IMPORT_ROWS)) {
    const rows = await db.selectFrom('oauth_authorizations').selectAll().where('auth_key', 'in', keys).execute();
    for (const row of rows)
      found.push({
        authKey: row.auth_key,
        userId: row.user_id as UserId,
        clientId: row.client_id,
        scope: row.scope,
        authorizedAt: row.authorized_at,
        expiresAt: row.expires_at,
      });
  }
  return found;
}

/** Inserts the authorizations that are missing, many per statement; answers how many it inserted. */
export async function insertAuthorizations(
  trx: Transaction<Database>,
  authorizations: readonly Authorization[],
): Promise<number> {
  let inserted = 0;
  for (const group of sizeLimitedGroups(authorizations, () => 1, IMPORT_ROWS)) {
    const result = await trx
      .insertInto('oauth_authorizations')
      .values(
        group.map((authorization) => ({
          auth_key: authorization.authKey,
          user_id: authorization.userId,
          client_id: authorization.clientId,
          scope: authorization.scope,
          authorized_at: authorization.authorizedAt,
          expires_at: authorization.expiresAt,
        })),
      )
      .onConflict((conflict) => conflict.column('auth_key').doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return inserted;
}
