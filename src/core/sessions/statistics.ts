// Usage statistics as the reference keeps them: every full reconcile pass notes how many
// sessions each profile has open and by how many users (`live_stats`); housekeeping turns a
// finished day into one row per profile (`aggregate_stats`: the day's highest connection count
// and its unique users, from the connection history); `GET /stats` reads the daily series.
import { openSessionCounts } from '../../storage/connection-log.js';
import {
  dailyStats,
  insertLiveStats,
  maxLiveConnections,
  insertDailyStatsIfMissing,
  uniqueUsersBetween,
  type DailyStats,
} from '../../storage/statistics.js';
import { formatAtom } from '../../shared/time.js';
import type { PortalContext } from '../context.js';
import { assertProfileAllowed, visibleProfiles } from '../access/index.js';

export async function recordLiveStats(ctx: PortalContext): Promise<void> {
  const counts = await openSessionCounts(ctx.db);
  await insertLiveStats(
    ctx.db,
    formatAtom(ctx.clock.now()),
    ctx.config.profiles.map((profile) => {
      const count = counts.get(profile.profileId);
      return { profileId: profile.profileId, connections: count?.connections ?? 0, users: count?.users ?? 0 };
    }),
  );
}

/**
 * Writes the daily row of every profile for `date` (YYYY-MM-DD, UTC), where it has none: one
 * there already came from the eduVPN import (eduVPN's own figures of the days before the move,
 * which this portal's live statistics cannot tell) or from this day's earlier run, and stays.
 */
export async function aggregateDay(ctx: PortalContext, date: string): Promise<DailyStats[]> {
  const from = `${date}T00:00:00+00:00`;
  const to = `${nextDay(date)}T00:00:00+00:00`;
  const [maxima, users] = await Promise.all([
    maxLiveConnections(ctx.db, from, to),
    uniqueUsersBetween(ctx.db, from, to),
  ]);
  const rows = ctx.config.profiles.map((profile) => ({
    date,
    profileId: profile.profileId,
    maxConnectionCount: maxima.get(profile.profileId) ?? 0,
    uniqueUserCount: users.get(profile.profileId) ?? 0,
  }));
  await insertDailyStatsIfMissing(ctx.db, rows);
  return rows;
}

/** YYYY-MM-DD of the UTC day after. */
export function nextDay(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

/** GET /stats: per profile (each configured one, or the one asked for), its finished days, oldest first. */
export async function dailySeries(
  ctx: PortalContext,
  filter: { readonly profileId?: string; readonly since?: string; readonly until?: string },
): Promise<Record<string, { date: string; max_connection_count: number; unique_user_count: number }[]>> {
  if (filter.profileId !== undefined) assertProfileAllowed(ctx, filter.profileId);
  const rows = await dailyStats(ctx.db, filter);
  const series: Record<string, { date: string; max_connection_count: number; unique_user_count: number }[]> = {};
  // A key limited to some profiles sees those only.
  for (const profile of visibleProfiles(ctx, ctx.config.profiles)) {
    if (filter.profileId === undefined || filter.profileId === profile.profileId) series[profile.profileId] = [];
  }
  for (const row of rows)
    series[row.profileId]?.push({
      date: row.date,
      max_connection_count: row.maxConnectionCount,
      unique_user_count: row.uniqueUserCount,
    });
  return series;
}
