// Queries on `live_stats` (connections online per profile, every full pass) and
// `aggregate_stats` (one row per day and profile), as the reference keeps them.
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';

export async function insertLiveStats(
  db: Db,
  dateTime: string,
  perProfile: readonly { readonly profileId: string; readonly connections: number; readonly users: number }[],
): Promise<void> {
  if (perProfile.length === 0) return;
  await db
    .insertInto('live_stats')
    .values(
      perProfile.map((entry) => ({
        date_time: dateTime,
        profile_id: entry.profileId,
        connection_count: entry.connections,
        unique_user_count: entry.users,
      })),
    )
    .onConflict((conflict) => conflict.columns(['date_time', 'profile_id']).doNothing())
    .execute();
}

/** The highest connection count of each profile between two times (ATOM, end excluded). */
export async function maxLiveConnections(db: Db, from: string, to: string): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('live_stats')
    .select((eb) => ['profile_id', eb.fn.max('connection_count').as('max')])
    .where('date_time', '>=', from)
    .where('date_time', '<', to)
    .groupBy('profile_id')
    .execute();
  return new Map(rows.map((row) => [row.profile_id, Number(row.max)]));
}

/** Users with a session overlapping [from, to), per profile. */
export async function uniqueUsersBetween(db: Db, from: string, to: string): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('connection_log')
    .select((eb) => ['profile_id', eb.fn.count<number | string>('user_id').distinct().as('users')])
    .where('connected_at', '<', to)
    .where((eb) => eb.or([eb('disconnected_at', 'is', null), eb('disconnected_at', '>=', from)]))
    .groupBy('profile_id')
    .execute();
  return new Map(rows.map((row) => [row.profile_id, Number(row.users)]));
}

export interface DailyStats {
  readonly date: string;
  readonly profileId: string;
  readonly maxConnectionCount: number;
  readonly uniqueUserCount: number;
}

/** Daily rows between two dates (YYYY-MM-DD, both included), oldest first. */
export async function dailyStats(
  db: Db,
  filter: { profileId?: string; since?: string; until?: string },
): Promise<DailyStats[]> {
  let query = db.selectFrom('aggregate_stats').selectAll();
  if (filter.profileId !== undefined) query = query.where('profile_id', '=', filter.profileId);
  if (filter.since !== undefined) query = query.where('date', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('date', '<=', filter.until);
  const rows = await query.orderBy('date').orderBy('profile_id').execute();
  return rows.map((row) => ({
    date: row.date,
    profileId: row.profile_id,
    maxConnectionCount: row.max_connection_count,
    uniqueUserCount: row.unique_user_count,
  }));
}

export async function pruneLiveStats(db: Db, before: string): Promise<number> {
  const result = await db.deleteFrom('live_stats').where('date_time', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Rows of one multi-row insert or look-up: well inside both databases' limits on parameters. */
const IMPORT_ROWS = 500;

/** The stored daily rows of these (date, profile) pairs. */
export async function dailyStatsOf(
  db: Db,
  keys: readonly { readonly date: string; readonly profileId: string }[],
): Promise<DailyStats[]> {
  const found: DailyStats[] = [];
  for (const group of sizeLimitedGroups(keys, () => 1, IMPORT_ROWS)) {
    const rows = await db
      .selectFrom('aggregate_stats')
      .selectAll()
      .where((eb) =>
        eb.or(group.map((key) => eb.and([eb('date', '=', key.date), eb('profile_id', '=', key.profileId)]))),
      )
      .execute();
    for (const row of rows)
      found.push({
        date: row.date,
        profileId: row.profile_id,
        maxConnectionCount: row.max_connection_count,
        uniqueUserCount: row.unique_user_count,
      });
  }
  return found;
}

/**
 * Inserts daily rows where none is stored (the housekeeping's, and those the eduVPN import
 * brings); with `replacingEmpty`, also over a stored row that counted nobody (a day this portal
 * ran before the move with no use). Answers how many were written.
 */
export async function insertDailyStatsIfMissing(
  db: Db,
  rows: readonly DailyStats[],
  replacingEmpty = false,
): Promise<number> {
  let inserted = 0;
  for (const group of sizeLimitedGroups(rows, () => 1, IMPORT_ROWS)) {
    const result = await db
      .insertInto('aggregate_stats')
      .values(
        group.map((row) => ({
          date: row.date,
          profile_id: row.profileId,
          max_connection_count: row.maxConnectionCount,
          unique_user_count: row.uniqueUserCount,
        })),
      )
      .onConflict((conflict) =>
        replacingEmpty
          ? conflict
              .columns(['date', 'profile_id'])
              .doUpdateSet((eb) => ({
                max_connection_count: eb.ref('excluded.max_connection_count'),
                unique_user_count: eb.ref('excluded.unique_user_count'),
              }))
              .where('aggregate_stats.max_connection_count', '=', 0)
              .where('aggregate_stats.unique_user_count', '=', 0)
          : conflict.columns(['date', 'profile_id']).doNothing(),
      )
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return inserted;
}
