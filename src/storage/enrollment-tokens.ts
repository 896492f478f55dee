// Queries on `enrollment_tokens`: an administrator's permission for a device to fetch its
// configuration itself. Only a keyed hash of each token is stored (src/keys/enrollment-token.ts);
// a use is taken by one conditional update, in the transaction that stores the configuration.
import { type Insertable, type Selectable, sql } from 'kysely';
import { asDeviceId, asProfileId, asUserId, type DeviceId, type ProfileId, type UserId } from '../shared/ids.js';
import type { Db } from './database.js';
import type { EnrollmentTokensTable } from './schema.js';

export interface StoredEnrollmentToken {
  readonly tokenId: string;
  readonly secretHash: string;
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly displayName: string | null;
  /** The configuration's lifetime (ISO 8601); null: sessionExpiry. */
  readonly expiresIn: string | null;
  readonly uses: number;
  readonly usesLeft: number;
  readonly createdAt: string;
  readonly createdBy: string | null;
  readonly expiresAt: string;
  readonly revokedAt: string | null;
  readonly lastUsedAt: string | null;
  /** The device the configuration is made for; null: for the user only. */
  readonly deviceId: DeviceId | null;
}

export async function insertEnrollmentToken(db: Db, token: StoredEnrollmentToken): Promise<void> {
  await db.insertInto('enrollment_tokens').values(enrollmentTokenRow(token)).execute();
}

export async function findEnrollmentToken(db: Db, tokenId: string): Promise<StoredEnrollmentToken | undefined> {
  const row = await db.selectFrom('enrollment_tokens').selectAll().where('token_id', '=', tokenId).executeTakeFirst();
  return row === undefined ? undefined : toToken(row);
}

/** Every token (of one user, or of the given profiles), newest first. */
export async function listEnrollmentTokens(
  db: Db,
  filter: { readonly userId?: UserId; readonly profiles?: readonly ProfileId[] | null } = {},
): Promise<StoredEnrollmentToken[]> {
  let query = db.selectFrom('enrollment_tokens').selectAll();
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.profiles !== undefined && filter.profiles !== null) {
    if (filter.profiles.length === 0) return [];
    query = query.where('profile_id', 'in', filter.profiles);
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('token_id').execute();
  return rows.map(toToken);
}

/**
 * Takes one use of a token that is neither used up, revoked nor expired at `now`. One
 * conditional update, run in the transaction that stores the configuration: of concurrent
 * redemptions only as many as there are uses find a row to change (PostgreSQL re-checks the
 * condition after waiting for the row's lock; SQLite runs one writer at a time).
 */
export async function takeEnrollmentTokenUse(db: Db, tokenId: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('enrollment_tokens')
    .set({ uses_left: sql<number>`uses_left - 1`, last_used_at: now })
    .where('token_id', '=', tokenId)
    .where('uses_left', '>', 0)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Revokes one token not revoked yet; false when there is none. */
export async function revokeEnrollmentToken(db: Db, tokenId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('enrollment_tokens')
    .set({ revoked_at: at })
    .where('token_id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The profiles of a user's tokens, ended ones too (they stay until housekeeping deletes them). */
export async function enrollmentTokenProfilesOfUser(db: Db, userId: UserId): Promise<ProfileId[]> {
  const rows = await db
    .selectFrom('enrollment_tokens')
    .select('profile_id')
    .distinct()
    .where('user_id', '=', userId)
    .execute();
  return rows.map((row) => row.profile_id as ProfileId);
}

/** The profiles of a device's tokens not revoked yet: those retire_device revokes. */
export async function unrevokedEnrollmentTokenProfilesOfDevice(db: Db, deviceId: DeviceId): Promise<ProfileId[]> {
  const rows = await db
    .selectFrom('enrollment_tokens')
    .select('profile_id')
    .distinct()
    .where('device_id', '=', deviceId)
    .where('revoked_at', 'is', null)
    .execute();
  return rows.map((row) => asProfileId(row.profile_id));
}

/** Revokes every token of a user that could still be used (disable_user); answers their ids. */
export async function revokeEnrollmentTokensOfUser(db: Db, userId: UserId, at: string): Promise<string[]> {
  const rows = await enrollmentTokensOfUserRevocation(db, userId, at).execute();
  return rows.map((row) => row.token_id);
}

/** The statement revokeEnrollmentTokensOfUser runs, for a statement of several (src/storage/user-access.ts). */
export function enrollmentTokensOfUserRevocation(db: Db, userId: UserId, at: string) {
  return db
    .updateTable('enrollment_tokens')
    .set({ revoked_at: at })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('uses_left', '>', 0)
    .where('expires_at', '>', at)
    .returning('token_id');
}

/** The ids of every token of a user (destroy, which deletes them with the user). */
export async function enrollmentTokenIdsOfUser(db: Db, userId: UserId): Promise<string[]> {
  const rows = await db.selectFrom('enrollment_tokens').select('token_id').where('user_id', '=', userId).execute();
  return rows.map((row) => row.token_id);
}

/** Revokes every token made for a device that could still be used (retire_device); answers their ids. */
export async function revokeEnrollmentTokensOfDevice(db: Db, deviceId: DeviceId, at: string): Promise<string[]> {
  const rows = await db
    .updateTable('enrollment_tokens')
    .set({ revoked_at: at })
    .where('device_id', '=', deviceId)
    .where('revoked_at', 'is', null)
    .returning('token_id')
    .execute();
  return rows.map((row) => row.token_id);
}

/** Deletes tokens that ended (expired, or revoked) before `before` (housekeeping). */
export async function deleteEnrollmentTokensEndedBefore(db: Db, before: string): Promise<number> {
  const result = await db
    .deleteFrom('enrollment_tokens')
    .where((where) => where.or([where('expires_at', '<', before), where('revoked_at', '<', before)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The token as its row; the Admin API lists tokens in the same names (src/core/enrollment/tokens.ts). */
export function enrollmentTokenRow(token: StoredEnrollmentToken): Insertable<EnrollmentTokensTable> {
  return {
    token_id: token.tokenId,
    secret_hash: token.secretHash,
    user_id: token.userId,
    profile_id: token.profileId,
    display_name: token.displayName,
    expires_in: token.expiresIn,
    uses: token.uses,
    uses_left: token.usesLeft,
    created_at: token.createdAt,
    created_by: token.createdBy,
    expires_at: token.expiresAt,
    revoked_at: token.revokedAt,
    last_used_at: token.lastUsedAt,
    device_id: token.deviceId,
  };
}

function toToken(row: Selectable<EnrollmentTokensTable>): StoredEnrollmentToken {
  return {
    tokenId: row.token_id,
    secretHash: row.secret_hash,
    userId: asUserId(row.user_id),
    profileId: asProfileId(row.profile_id),
    displayName: row.display_name,
    expiresIn: row.expires_in,
    uses: Number(row.uses),
    usesLeft: Number(row.uses_left),
    createdAt: row.created_at,
    createdBy: row.created_by,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    deviceId: row.device_id === null ? null : asDeviceId(row.device_id),
  };
}
