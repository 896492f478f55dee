// Queries on `scim_users` (migration 0027): the directory's view of a portal user — its SCIM id,
// the directory's externalId and the attributes the directory sent — read with the user's
// state (`active` is the user's, not a copy that could disagree with disable_user). Its userName
// (the portal user id) is looked up by a key without regard to case (migration 0057).
import { z } from 'zod';
import type { UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { isPostgres, type Db } from './database.js';
import { scimNameKey } from './scim-name-key.js';

export interface StoredScimUser {
  readonly scimId: string;
  readonly userId: UserId;
  readonly externalId: string | null;
  /** The resource as the directory last sent it, without id, meta and active. */
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** A SCIM user with its portal user's state. */
export interface ScimUserWithState extends StoredScimUser {
  readonly isDisabled: boolean;
}

/** One page of SCIM users, in user id order, and how many match in all. */
export interface ScimUsersPage {
  readonly users: readonly ScimUserWithState[];
  readonly total: number;
}

const attributesSchema = z.record(z.string(), z.unknown());

export async function insertScimUser(db: Db, user: StoredScimUser): Promise<void> {
  await db
    .insertInto('scim_users')
    .values({
      scim_id: user.scimId,
      user_id: user.userId,
      user_name_key: scimNameKey(user.userId),
      external_id: user.externalId,
      attributes: JSON.stringify(user.attributes),
      created_at: user.createdAt,
      updated_at: user.updatedAt,
    })
    .execute();
}

export async function updateScimUser(
  db: Db,
  scimId: string,
  change: Pick<StoredScimUser, 'externalId' | 'attributes' | 'updatedAt'>,
): Promise<void> {
  await db
    .updateTable('scim_users')
    .set({
      external_id: change.externalId,
      attributes: JSON.stringify(change.attributes),
      updated_at: change.updatedAt,
    })
    .where('scim_id', '=', scimId)
    .execute();
}

/** Notes what the directory said of the user's `active`, in the transaction of the change that said it. */
export async function noteDirectoryActive(db: Db, userId: UserId, active: boolean): Promise<void> {
  await db
    .updateTable('scim_users')
    .set({ directory_active: active ? 1 : 0 })
    .where('user_id', '=', userId)
    .execute();
}

/** Whether the directory's last word on the user is `active: false` (false for a user the directory does not have). */
export async function directoryCallsInactive(db: Db, userId: UserId): Promise<boolean> {
  const row = await db
    .selectFrom('scim_users')
    .select('directory_active')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.directory_active === 0;
}

/**
 * Which of `userIds` the directory's last word calls inactive (`active: false`), sorted: the
 * users `enable_user` refuses. One look-up of the unique index of the users' ids.
 */
export async function directoryInactiveAmong(db: Db, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const rows = await db
    .selectFrom('scim_users')
    .select('user_id')
    .where('user_id', 'in', userIds)
    .where('directory_active', '=', 0)
    .orderBy('user_id')
    .execute();
  return rows.map((row) => row.user_id);
}

export async function deleteScimUser(db: Db, scimId: string): Promise<void> {
  await db.deleteFrom('scim_users').where('scim_id', '=', scimId).execute();
}

function withState(db: Db) {
  return db
    .selectFrom('scim_users')
    .innerJoin('users', 'users.user_id', 'scim_users.user_id')
    .selectAll('scim_users')
    .select('users.is_disabled');
}

export async function findScimUser(db: Db, scimId: string): Promise<ScimUserWithState | undefined> {
  const row = await withState(db).where('scim_users.scim_id', '=', scimId).executeTakeFirst();
  return row === undefined ? undefined : toScimUser(row);
}

/**
 * The SCIM user read in a change's transaction, its row locked first on PostgreSQL (SQLite runs
 * one writer at a time): a change applied to it is applied to what the last change left.
 */
export async function lockScimUser(trx: Db, scimId: string): Promise<ScimUserWithState | undefined> {
  if (isPostgres(trx)) {
    const locked = await trx
      .selectFrom('scim_users')
      .select('scim_id')
      .where('scim_id', '=', scimId)
      .forUpdate()
      .executeTakeFirst();
    if (locked === undefined) return undefined;
  }
  // Read after the lock, in a statement of its own: it sees what the change before committed.
  return findScimUser(trx, scimId);
}

export async function findScimUserOfUser(db: Db, userId: UserId): Promise<ScimUserWithState | undefined> {
  const row = await withState(db).where('scim_users.user_id', '=', userId).executeTakeFirst();
  return row === undefined ? undefined : toScimUser(row);
}

/** The SCIM user whose userName is `userName` in any case (RFC 7643: userName is not case-exact). */
export async function findScimUserNamed(db: Db, userName: string): Promise<ScimUserWithState | undefined> {
  const row = await scimUserNamedQuery(db, userName).executeTakeFirst();
  return row === undefined ? undefined : toScimUser(row);
}

export function scimUserNamedQuery(db: Db, userName: string) {
  return withState(db).where('scim_users.user_name_key', '=', scimNameKey(userName));
}

/**
 * Ids in one `in (…)` list or rows in one INSERT: a group's 50,000 members at once were more
 * bound values than SQLite (32,766) or PostgreSQL (65,535) takes in one statement.
 */
export const SCIM_IDS_PER_STATEMENT = 1000;

/** The SCIM ids of `scimIds` that name a SCIM user. */
export async function knownScimUserIds(db: Db, scimIds: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>();
  for (const ids of sizeLimitedGroups(scimIds, () => 1, SCIM_IDS_PER_STATEMENT)) {
    const rows = await db.selectFrom('scim_users').select('scim_id').where('scim_id', 'in', ids).execute();
    for (const row of rows) known.add(row.scim_id);
  }
  return known;
}

/** A check of a user's profiles still to run, and the group change that asked for it. */
export interface PendingProfileCheck {
  readonly userId: UserId;
  readonly check: string;
}

/** Notes (in a group change's transaction, made `at`) that these SCIM users' profiles are to be checked for the change `check`. */
export async function noteProfileChecks(db: Db, scimIds: readonly string[], check: string, at: string): Promise<void> {
  for (const ids of sizeLimitedGroups(scimIds, () => 1, SCIM_IDS_PER_STATEMENT))
    await db
      .updateTable('scim_users')
      .set({ profile_check: check, profile_check_at: at })
      .where('scim_id', 'in', ids)
      .execute();
}

/** The two ids a self-registration's note may take: which one it took tells whether another check was pending. */
export interface RegistrationNote {
  /** Taken when no check was pending: the registration clears it itself once the groups grant the profile. */
  readonly fresh: string;
  /**
   * Taken over a pending check, whose date is kept: the registration never clears it, so only a
   * check of all the user's profiles does (the pending check's own run may have read the user's
   * devices before this one was there, and may not have finished).
   */
  readonly replaced: string;
}

/**
 * In a device's self-registration (its transaction): notes a check of the user's profiles, made
 * `at`, unless the user is no SCIM user. One statement, so that a group change's note committed
 * meanwhile is seen (PostgreSQL reads the row's newest version once it has its lock).
 */
export async function noteRegistrationCheck(db: Db, userId: UserId, note: RegistrationNote, at: string): Promise<void> {
  await db
    .updateTable('scim_users')
    .set((eb) => ({
      profile_check: eb.case().when('profile_check', 'is', null).then(note.fresh).else(note.replaced).end(),
      profile_check_at: eb.fn.coalesce('profile_check_at', eb.val(at)),
    }))
    .where('user_id', '=', userId)
    .execute();
}

/** Whether a check of the user's profiles is noted and still to run. */
export async function profileCheckPending(db: Db, userId: UserId): Promise<boolean> {
  const row = await db
    .selectFrom('scim_users')
    .select('profile_check')
    .where('user_id', '=', userId)
    .where('profile_check', 'is not', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Up to `limit` SCIM ids after `afterScimId` (null: from the first), in order: all users, a page at a time. */
export async function scimIdsAfter(db: Db, afterScimId: string | null, limit: number): Promise<string[]> {
  let query = db.selectFrom('scim_users').select('scim_id').orderBy('scim_id').limit(limit);
  if (afterScimId !== null) query = query.where('scim_id', '>', afterScimId);
  return (await query.execute()).map((row) => row.scim_id);
}

/** Dates the users' notes of `check` `at` (ATOM): a check that stopped is due for the pending checks at once. */
export async function dateProfileChecks(db: Db, userIds: readonly UserId[], check: string, at: string): Promise<void> {
  for (const ids of sizeLimitedGroups(userIds, () => 1, SCIM_IDS_PER_STATEMENT))
    await db
      .updateTable('scim_users')
      .set({ profile_check_at: at })
      .where('user_id', 'in', ids)
      .where('profile_check', '=', check)
      .execute();
}

/** The check is done: unless a later change asked for another meanwhile, nothing is pending for the user. */
export async function clearProfileCheck(db: Db, userId: UserId, check: string): Promise<void> {
  await db
    .updateTable('scim_users')
    .set({ profile_check: null, profile_check_at: null })
    .where('user_id', '=', userId)
    .where('profile_check', '=', check)
    .execute();
}

/** Up to `limit` checks noted at `notedBy` (ATOM) or earlier, in user id order after `afterUserId`. */
export async function pendingProfileChecks(
  db: Db,
  notedBy: string,
  afterUserId: UserId | null,
  limit: number,
): Promise<PendingProfileCheck[]> {
  let query = db
    .selectFrom('scim_users')
    .select(['user_id', 'profile_check'])
    .where('profile_check_at', '<=', notedBy)
    .orderBy('user_id')
    .limit(limit);
  if (afterUserId !== null) query = query.where('user_id', '>', afterUserId);
  const rows = await query.execute();
  return rows.flatMap((row) =>
    row.profile_check === null ? [] : [{ userId: row.user_id as UserId, check: row.profile_check }],
  );
}

/** Which SCIM users a list asks for: all, those of a userName (in any case), or of an externalId (exactly). */
export interface ScimUsersMatch {
  readonly userName?: string;
  readonly externalId?: string;
}

/** A page of SCIM users (`offset` from 0) that `match`. */
export async function scimUsersPage(
  db: Db,
  match: ScimUsersMatch,
  offset: number,
  limit: number,
): Promise<ScimUsersPage> {
  const query = scimUsersMatchingQuery(db, match);
  const counted = await query
    .clearSelect()
    .select((eb) => eb.fn.countAll<number | string>().as('total'))
    .executeTakeFirstOrThrow();
  const rows = limit === 0 ? [] : await query.orderBy('scim_users.user_id').limit(limit).offset(offset).execute();
  return { users: rows.map(toScimUser), total: Number(counted.total) };
}

export function scimUsersMatchingQuery(db: Db, match: ScimUsersMatch) {
  let query = withState(db);
  if (match.userName !== undefined) query = query.where('scim_users.user_name_key', '=', scimNameKey(match.userName));
  if (match.externalId !== undefined) query = query.where('scim_users.external_id', '=', match.externalId);
  return query;
}

function toScimUser(row: {
  scim_id: string;
  user_id: string;
  external_id: string | null;
  attributes: string;
  created_at: string;
  updated_at: string;
  is_disabled: number;
}): ScimUserWithState {
  return {
    scimId: row.scim_id,
    userId: row.user_id as UserId,
    externalId: row.external_id,
    attributes: attributesSchema.parse(JSON.parse(row.attributes)),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    isDisabled: row.is_disabled !== 0,
  };
}
