// Queries on the `users` table.
import { sql, type Transaction } from 'kysely';
import type { ProfileId, UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { isPostgres, type Db } from './database.js';
import { preparedQuery, type Slot } from './prepared-query.js';
import type { Database } from './schema.js';

export interface UserState {
  readonly userId: UserId;
  readonly isDisabled: boolean;
}

export async function findUser(db: Db, userId: UserId): Promise<UserState | undefined> {
  const row = await db
    .selectFrom('users')
    .select(['user_id', 'is_disabled'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row === undefined ? undefined : { userId: row.user_id as UserId, isDisabled: row.is_disabled !== 0 };
}

/**
 * Inserts the user when missing (concurrent creates for one new user are fine) and returns its
 * state, and whether this transaction made it. On PostgreSQL the row stays share-locked until the transaction ends, so a concurrent
 * disable_user or destroy waits for the configuration being added and then sees it (SQLite runs
 * one writer at a time: nothing to lock there).
 */
export async function ensureUser(
  trx: Transaction<Database>,
  userId: UserId,
  now: string,
): Promise<UserState & { readonly created: boolean }> {
  if (isPostgres(trx)) {
    // One round trip (a create's few): the insert when the user is missing, else its row,
    // share-locked. No row: another transaction made or deleted the user while this statement
    // waited for it (a destroy racing the create); the steps below decide.
    const [row] = (await ensureUserOnPostgres(trx, { userId, now })).rows;
    if (row !== undefined) return { userId, isDisabled: row.is_disabled !== 0, created: row.created };
  }
  // Most creates are for known users: one read, no write.
  const existing = await findUserForCreate(trx, userId);
  if (existing !== undefined) return { ...existing, created: false };
  // A new row is this transaction's own (on PostgreSQL locked by the insert) and enabled.
  const { rows } = await insertUserIfMissing(trx, { userId, now });
  if (rows.length === 1) return { userId, isDisabled: false, created: true };
  // Another transaction made it meanwhile.
  const user = await findUserForCreate(trx, userId);
  if (user === undefined) throw new Error('user vanished while being created');
  return { ...user, created: false };
}

/**
 * PostgreSQL: inserts the user when missing (a row with created) or share-locks the row there
 * was (its is_disabled). Both parts read the statement's snapshot: a user another transaction
 * committed while this insert waited for it is in neither; the caller reads it again.
 */
const ensureUserOnPostgres = preparedQuery((db, value: Slot<{ userId: UserId; now: string }>) =>
  db
    .with('inserted', (cte) =>
      cte
        .insertInto('users')
        .values({ user_id: value('userId'), created_at: value('now'), last_seen: value('now'), auth_data: null })
        .onConflict((conflict) => conflict.column('user_id').doNothing())
        .returning('user_id'),
    )
    .selectFrom('inserted')
    .select([sql<boolean>`true`.as('created'), sql<number>`0`.as('is_disabled')])
    .unionAll(
      db
        .selectFrom((eb) =>
          eb.selectFrom('users').select('is_disabled').where('user_id', '=', value('userId')).forShare().as('existing'),
        )
        .select([sql<boolean>`false`.as('created'), 'is_disabled']),
    ),
);

const insertUserIfMissing = preparedQuery((db, value: Slot<{ userId: UserId; now: string }>) =>
  db
    .insertInto('users')
    .values({ user_id: value('userId'), created_at: value('now'), last_seen: value('now'), auth_data: null })
    .onConflict((conflict) => conflict.column('user_id').doNothing())
    .returning('user_id'),
);

const selectUserForCreate = preparedQuery((db, value: Slot<{ userId: UserId }>) => {
  const query = db.selectFrom('users').select(['user_id', 'is_disabled']).where('user_id', '=', value('userId'));
  return isPostgres(db) ? query.forShare() : query;
});

async function findUserForCreate(trx: Transaction<Database>, userId: UserId): Promise<UserState | undefined> {
  const [row] = (await selectUserForCreate(trx, { userId })).rows;
  return row === undefined ? undefined : { userId: row.user_id as UserId, isDisabled: row.is_disabled !== 0 };
}

/** False when there is no such user. `by`: who disables (kept until the user is enabled again). */
export async function setUserDisabled(
  db: Db,
  userId: UserId,
  disabled: boolean,
  by: string | null = null,
): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('users')
    .set({ is_disabled: disabled ? 1 : 0, disabled_by: disabled ? by : null })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

/** Disables the user only when it is enabled (a disable already there keeps its author); false otherwise, nothing changed. */
export async function disableEnabledUser(db: Db, userId: UserId, by: string): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('users')
    .set({ is_disabled: 1, disabled_by: by })
    .where('user_id', '=', userId)
    .where('is_disabled', '=', 0)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

/** Enables the user only when `by` disabled it (and nobody since); false otherwise, nothing changed. */
export async function enableUserDisabledBy(db: Db, userId: UserId, by: string): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('users')
    .set({ is_disabled: 0, disabled_by: null })
    .where('user_id', '=', userId)
    .where('is_disabled', '=', 1)
    .where('disabled_by', '=', by)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

export async function deleteUser(db: Db, userId: UserId): Promise<void> {
  await db.deleteFrom('users').where('user_id', '=', userId).execute();
}

/**
 * Locks the user's row until the transaction ends, so no other portal instance adds a
 * configuration for this user meanwhile (its insert waits, then finds the user gone and
 * retries). SQLite runs one writer at a time: nothing to lock there. Answers whether the user
 * is there, as the transaction sees it once it holds the lock.
 */
export async function lockUser(trx: Transaction<Database>, userId: UserId): Promise<boolean> {
  const query = trx.selectFrom('users').select('user_id').where('user_id', '=', userId);
  const rows = await (isPostgres(trx) ? query.forUpdate() : query).execute();
  return rows.length > 0;
}

/**
 * The user ids, sorted, as the JSON text of an array (the database writes it: at 100,000 users
 * several times faster than an object per row). `profiles`: only users with a configuration
 * (WireGuard or OpenVPN) in one of them; null: every user.
 */
export async function userIdsJson(
  db: Db,
  filter: { onlyDisabled: boolean; profiles?: readonly ProfileId[] | null },
): Promise<string> {
  const query = usersFiltered(db, filter);
  if (query === null) return '[]';
  const row = isPostgres(db)
    ? await db
        .selectFrom(query.as('listed'))
        .select(sql<string | null>`json_agg(user_id ORDER BY user_id)::text`.as('list'))
        .executeTakeFirst()
    : await db
        .selectFrom(query.orderBy('user_id').as('listed'))
        .select(sql<string | null>`json_group_array(user_id)`.as('list'))
        .executeTakeFirst();
  return row?.list ?? '[]';
}

/**
 * One page of user ids, sorted bytewise (the columns' collation on both databases), after
 * `after`, starting with `prefix`: the range [prefix, prefix + U+10FFFF) holds exactly the ids
 * that start with it (short of an id whose next character is the noncharacter U+10FFFF), so the
 * primary key index serves it.
 */
export async function userIdsPage(
  db: Db,
  filter: {
    onlyDisabled: boolean;
    profiles: readonly ProfileId[] | null;
    prefix: string | null;
    after: string | null;
    limit: number;
  },
): Promise<string[]> {
  let query = usersFiltered(db, filter);
  if (query === null) return [];
  const { prefix, after } = filter;
  if (prefix !== null) query = query.where('user_id', '>=', prefix).where('user_id', '<', `${prefix}\u{10FFFF}`);
  if (after !== null) query = query.where('user_id', '>', after);
  const rows = await query.orderBy('user_id').limit(filter.limit).execute();
  return rows.map((row) => row.user_id);
}

/** Users, the disabled ones or those a key limited to profiles sees; null: none at all. */
function usersFiltered(db: Db, filter: { onlyDisabled: boolean; profiles?: readonly ProfileId[] | null }) {
  let query = db.selectFrom('users').select('user_id');
  if (filter.onlyDisabled) query = query.where('is_disabled', '=', 1);
  const profiles = filter.profiles ?? null;
  if (profiles !== null) {
    if (profiles.length === 0) return null;
    query = query.where((where) =>
      where.or([
        where(
          'user_id',
          'in',
          where.selectFrom('wg_peers').select('wg_peers.user_id').where('wg_peers.profile_id', 'in', profiles),
        ),
        where(
          'user_id',
          'in',
          where
            .selectFrom('certificates')
            .select('certificates.user_id')
            .where('certificates.profile_id', 'in', profiles),
        ),
      ]),
    );
  }
  return query;
}

/** The profiles the user has configurations in (WireGuard or OpenVPN), each once. */
export async function configurationProfilesOfUser(db: Db, userId: UserId): Promise<ProfileId[]> {
  const rows = await db
    .selectFrom('wg_peers')
    .select('profile_id')
    .where('user_id', '=', userId)
    .union(db.selectFrom('certificates').select('profile_id').where('user_id', '=', userId))
    .execute();
  return [...new Set(rows.map((row) => row.profile_id as ProfileId))];
}

/** A user brought from another server (the eduVPN import), with its own times and state. */
export interface ImportedUser {
  readonly userId: UserId;
  readonly createdAt: string;
  readonly lastSeen: string;
  readonly permissionList: string;
  readonly authData: string | null;
  readonly isDisabled: boolean;
}

/** Rows of one multi-row insert: well inside both databases' limits on parameters. */
const IMPORT_ROWS = 500;

/** The users among these ids that exist, with their state. */
export async function usersWithIds(
  db: Db,
  userIds: readonly UserId[],
): Promise<Map<UserId, UserState & { readonly disabledHere: boolean }>> {
  const found = new Map<UserId, UserState & { readonly disabledHere: boolean }>();
  for (const ids of sizeLimitedGroups(userIds, () => 1, IMPORT_ROWS)) {
    const rows = await db
      .selectFrom('users')
      .select(['user_id', 'is_disabled', 'disabled_by'])
      .where('user_id', 'in', ids)
      .execute();
    for (const row of rows)
      found.set(row.user_id as UserId, {
        userId: row.user_id as UserId,
        isDisabled: row.is_disabled !== 0,
        disabledHere: disabledHere(row),
      });
  }
  return found;
}

/** Of `userIds`, those here, each with when it was made here (its `created_at`). */
export async function usersCreatedAt(db: Db, userIds: readonly UserId[]): Promise<Map<UserId, string>> {
  const found = new Map<UserId, string>();
  for (const ids of sizeLimitedGroups(userIds, () => 1, IMPORT_ROWS)) {
    const rows = await db.selectFrom('users').select(['user_id', 'created_at']).where('user_id', 'in', ids).execute();
    for (const row of rows) found.set(row.user_id as UserId, row.created_at);
  }
  return found;
}

/**
 * `disabled_by` of a user the eduVPN import brought disabled (eduVPN had it disabled) and nobody
 * here disabled since: a disable here (an administrator's, the directory's) sets its own name.
 */
export const DISABLED_BY_IMPORT = '(eduvpn import)';

/**
 * Makes `by` the disabler of `userId` when only the eduVPN import disabled it (as eduVPN had it):
 * a disable here that finds it disabled already takes it over, so that the import no longer
 * counts it as its own (and brings it nothing more). Answers whether it did.
 */
export async function takeOverImportDisable(db: Db, userId: UserId, by: string): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('users')
    .set({ disabled_by: by })
    .where('user_id', '=', userId)
    .where('is_disabled', '=', 1)
    .where('disabled_by', '=', DISABLED_BY_IMPORT)
    .executeTakeFirstOrThrow();
  return numUpdatedRows > 0n;
}

/** Whether a user row is disabled here, by anyone but the eduVPN import. */
function disabledHere(row: { readonly is_disabled: number; readonly disabled_by: string | null }): boolean {
  return row.is_disabled !== 0 && row.disabled_by !== DISABLED_BY_IMPORT;
}

/** Every user disabled here, but those only the eduVPN import disabled (read once before it walks eduVPN's records). */
export async function usersDisabledHereIds(db: Db): Promise<UserId[]> {
  const rows = await db
    .selectFrom('users')
    .select(['user_id', 'is_disabled', 'disabled_by'])
    .where('is_disabled', '=', 1)
    .execute();
  return rows.filter(disabledHere).map((row) => row.user_id as UserId);
}

/**
 * Of `userIds`, those disabled here, but those only the eduVPN import disabled. Locks nothing: the
 * import reads this while it walks eduVPN's records (minutes, in one transaction), and a lock
 * held that long would keep a disable waiting past `databaseTimeout`; it checks again, locked,
 * just before it commits (`lockUsersDisabledHereAmong`).
 */
export async function usersDisabledHereAmong(db: Db, userIds: readonly UserId[]): Promise<Set<UserId>> {
  return disabledHereAmong(db, userIds, false);
}

/**
 * `usersDisabledHereAmong` read in the import's transaction as its last step: on PostgreSQL it
 * share-locks the rows of all of `userIds` until the commit, which follows at once, so that a
 * disable of one of them meanwhile waits for the commit (and then finds what the import brought).
 */
export async function lockUsersDisabledHereAmong(
  trx: Transaction<Database>,
  userIds: readonly UserId[],
): Promise<Set<UserId>> {
  return disabledHereAmong(trx, userIds, true);
}

async function disabledHereAmong(db: Db, userIds: readonly UserId[], lock: boolean): Promise<Set<UserId>> {
  const found = new Set<UserId>();
  for (const ids of sizeLimitedGroups([...new Set(userIds)], () => 1, IMPORT_ROWS)) {
    const query = db.selectFrom('users').select(['user_id', 'is_disabled', 'disabled_by']).where('user_id', 'in', ids);
    const rows = await (lock && isPostgres(db) ? query.forShare() : query).execute();
    for (const row of rows) if (disabledHere(row)) found.add(row.user_id as UserId);
  }
  return found;
}

/** Inserts the users that are missing, many per statement; answers how many it inserted. */
export async function insertImportedUsers(trx: Transaction<Database>, users: readonly ImportedUser[]): Promise<number> {
  let inserted = 0;
  for (const group of sizeLimitedGroups(users, () => 1, IMPORT_ROWS)) {
    const result = await trx
      .insertInto('users')
      .values(
        group.map((user) => ({
          user_id: user.userId,
          created_at: user.createdAt,
          last_seen: user.lastSeen,
          permission_list: user.permissionList,
          auth_data: user.authData,
          is_disabled: user.isDisabled ? 1 : 0,
          disabled_by: user.isDisabled ? DISABLED_BY_IMPORT : null,
        })),
      )
      .onConflict((conflict) => conflict.column('user_id').doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return inserted;
}
