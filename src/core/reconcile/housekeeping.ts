// The reference's daily housekeeping (§11.3), run after the first full reconcile pass of each UTC
// day, apart from the passes (under a lock of its own, so one portal instance does it; beyond the
// expired configurations it deletes as the sweep does, it changes nothing the nodes must hold, so
// no pass waits for it): every finished day since the
// last run becomes a row of daily statistics per profile; the kinds of personal record of the
// retention registry lose what is older than each one's retention (src/core/retention/: session
// history, the client's own addresses, finished webhook deliveries, audit entries, finished
// revocation receipts, ended legal holds; a legal hold's kept; one audit row with the counts);
// live statistics older than a week, authorizations that expired before today and enrollment tokens that ended (expired or
// revoked) more than a month ago are deleted, and so are the eduVPN import's notes it no longer
// needs (src/storage/imported-records.ts: after the receipts, whose pruning ends a user's). Expired
// configurations need no daily run: they are swept the moment they expire. The day of the last
// run is kept in the database, so a restart does not repeat it; one more than a day ahead of the
// clock (the clock ran ahead and was set back) does not hold it back.
//
// Answers kept for retries (Idempotency-Key) hold private keys: they are deleted by every full
// pass once their 24 hours are over, not once a day.
import { formatAtom } from '../../shared/time.js';
import { CHANGE_MARKER_SECONDS, pruneChangeMarkers } from '../../storage/change-markers.js';
import { deleteExpiredAuthorizations } from '../../storage/authorizations.js';
import { deleteEnrollmentTokensEndedBefore } from '../../storage/enrollment-tokens.js';
import { pruneIdempotencyRecords } from '../../storage/idempotency.js';
import { pruneImportedRecords } from '../../storage/imported-records.js';
import { LISTING_JOURNAL_SECONDS, pruneListingChanges } from '../../storage/listing-changes.js';
import { readState, writeState } from '../../storage/portal-state.js';
import { pruneLiveStats } from '../../storage/statistics.js';
import type { PortalContext } from '../context.js';
import { deleteExpiredConfigurations } from './pass.js';
import { aggregateDay, nextDay } from '../sessions/index.js';
import { applyRetention, type RetentionReport } from '../retention/index.js';

const LAST_RUN_KEY = 'housekeeping.day';
/** Live statistics are kept this long (the reference: one week). */
const LIVE_STATS_DAYS = 7;
/** Ended enrollment tokens stay listed this long, so a device's 410 can still be explained. */
const ENDED_TOKEN_DAYS = 30;
/** After a long stop, at most this many missed days are aggregated. */
const MAX_CATCH_UP_DAYS = 31;

export interface HousekeepingResult {
  readonly day: string;
  readonly aggregatedDays: readonly string[];
  readonly connectionLogDeleted: number;
  readonly liveStatsDeleted: number;
  readonly expiredOauthGrantsDeleted: number;
  readonly auditEntriesDeleted: number;
  readonly revocationsDeleted: number;
  readonly webhookDeliveriesDeleted: number;
  readonly enrollmentTokensDeleted: number;
  /** The eduVPN import's notes of configurations that expired and of destroyed users whose receipt went. */
  readonly importedRecordsDeleted: number;
  /** Every kind of the retention registry: what went and what a legal hold kept. */
  readonly retention: RetentionReport;
}

/**
 * What every full pass tidies: expired answers kept for retries, the listing journal; and, once a
 * day, the rest. `checkpoint` runs between the steps (and the retention's kinds and their
 * batches): it throws to stop there (the portal stops, or the lock was lost).
 */
export async function runHousekeeping(
  ctx: PortalContext,
  checkpoint: () => void = () => {},
): Promise<{ readonly keptAnswersDeleted: number; readonly daily: HousekeepingResult | null }> {
  const keptAnswersDeleted = await pruneIdempotencyRecords(ctx.db, formatAtom(ctx.clock.now()));
  checkpoint();
  // The listing journal grows with every change; a reader is never more than half of it behind.
  await pruneListingChanges(ctx.db, LISTING_JOURNAL_SECONDS);
  checkpoint();
  await pruneChangeMarkers(ctx.db, CHANGE_MARKER_SECONDS);
  checkpoint();
  return { keptAnswersDeleted, daily: await runHousekeepingIfDue(ctx, checkpoint) };
}

/** Runs housekeeping unless it already ran today (UTC, by the portal's clock); `checkpoint` between the steps. */
export async function runHousekeepingIfDue(
  ctx: PortalContext,
  checkpoint: () => void = () => {},
): Promise<HousekeepingResult | null> {
  const now = ctx.clock.now();
  const today = formatAtom(now).slice(0, 10);
  const stored = await readState(ctx.db, LAST_RUN_KEY);
  // Today's is done; so is tomorrow's, by another instance whose clock is a little ahead past
  // midnight. A day further ahead was written by a clock that ran ahead and was set back since:
  // waited for, it would hold back every retention until the clock reached it again.
  if (stored !== null && stored >= today && stored <= nextDay(today)) return null;
  const lastRun = stored !== null && stored < today ? stored : null;
  if (stored !== null && lastRun === null)
    ctx.logger.warn(
      { day: today, lastRun: stored },
      `housekeeping last ran on ${stored}, ahead of today (${today}): the clock was set back; running today's`,
    );
  // Once a day: with "housekeeping done" it shows how long the day's run took.
  ctx.logger.info({ day: today, lastRun }, 'housekeeping started');

  await deleteExpiredConfigurations(ctx);
  const aggregatedDays: string[] = [];
  let day = lastRun ?? previousDay(today);
  const earliest = dayBefore(today, MAX_CATCH_UP_DAYS);
  if (day < earliest) day = earliest;
  for (; day < today; day = nextDay(day)) {
    checkpoint();
    await aggregateDay(ctx, day);
    aggregatedDays.push(day);
  }
  checkpoint();
  const startOfToday = `${today}T00:00:00+00:00`;
  const liveStatsDeleted = await pruneLiveStats(ctx.db, `${dayBefore(today, LIVE_STATS_DAYS)}T00:00:00+00:00`);
  const expiredOauthGrantsDeleted = await deleteExpiredAuthorizations(ctx.db, startOfToday);
  checkpoint();
  // Personal records, each kind by its own retention, a legal hold's kept; one audit row says what went.
  const retention = await applyRetention(ctx, checkpoint);
  checkpoint();
  const importedRecordsDeleted = await pruneImportedRecords(ctx.db, formatAtom(now));
  const enrollmentTokensDeleted = await deleteEnrollmentTokensEndedBefore(
    ctx.db,
    formatAtom(new Date(now.getTime() - ENDED_TOKEN_DAYS * 86_400_000)),
  );
  checkpoint();
  await writeState(ctx.db, LAST_RUN_KEY, today);
  const result = {
    day: today,
    aggregatedDays,
    connectionLogDeleted: retention.kinds['connection_log']?.removed ?? 0,
    liveStatsDeleted,
    expiredOauthGrantsDeleted,
    auditEntriesDeleted: retention.kinds['audit_log']?.removed ?? 0,
    revocationsDeleted: retention.kinds['revocations']?.removed ?? 0,
    retention,
    webhookDeliveriesDeleted: retention.kinds['webhook_deliveries']?.removed ?? 0,
    enrollmentTokensDeleted,
    importedRecordsDeleted,
  };
  ctx.logger.info(result, 'housekeeping done');
  return result;
}

function previousDay(day: string): string {
  return dayBefore(day, 1);
}

function dayBefore(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}
