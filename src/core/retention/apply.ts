// The retention pass of the daily housekeeping: every kind of the registry loses what is older
// than its retention, except the records of users under a legal hold in force now; then one
// audit row (call `housekeeping`, by the portal itself) says how many records of each kind went
// and how many a hold kept. A pass that removed and kept nothing writes no row. A kind that fails
// (a statement past its time limit, a database that went away) ends the pass there, and the row
// (status 500) still says what the kinds before it removed: their deletions are committed.
import { subtractDurationClamped } from '../../shared/iso-duration.js';
import { formatAtom } from '../../shared/time.js';
import { heldUserIds, type RetentionCount } from '../../storage/legal-holds.js';
import { recordAdminCall } from '../access/index.js';
import { portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { RETENTION_KINDS } from './registry.js';

/** The audit log's name for the housekeeping's row. */
export const HOUSEKEEPING_CALL = 'housekeeping';

export interface RetentionReport {
  /** Per kind of the registry, in its order. */
  readonly kinds: Readonly<Record<string, RetentionCount>>;
  /** How many users a legal hold covered. */
  readonly heldUsers: number;
}

/**
 * `checkpoint` runs between the kinds: it throws to stop there (the portal stops, the lock was
 * lost), and the audit row still says what the kinds done so far removed before it is thrown on.
 * It is asked between a kind's batches too: a kind under way then ends at its batch, counted.
 */
export async function applyRetention(ctx: PortalContext, checkpoint: () => void = () => {}): Promise<RetentionReport> {
  const now = ctx.clock.now();
  const heldUsers = new Set<string>();
  const kinds: Record<string, RetentionCount> = {};
  let stopped: { readonly by: unknown } | null = null;
  let failed: { readonly kind: string; readonly error: unknown } | null = null;
  // Between batches: stop there if the checkpoint would throw; the next checkpoint throws it.
  const stopping = (): boolean => {
    try {
      checkpoint();
      return false;
    } catch {
      return true;
    }
  };
  for (const entry of RETENTION_KINDS) {
    try {
      checkpoint();
    } catch (error) {
      stopped = { by: error };
      break;
    }
    // A month back from a month's end is the last day of a shorter month, never into this one.
    const before = formatAtom(subtractDurationClamped(now, entry.retention(ctx.config)));
    try {
      // Read again for each kind: over a backlog the kinds take minutes, and a hold placed
      // meanwhile keeps what the kinds after it would delete.
      const held = await heldUserIds(ctx.db, formatAtom(ctx.clock.now()));
      for (const userId of held) heldUsers.add(userId);
      kinds[entry.kind] = await entry.prune(ctx.db, before, held, stopping, ctx.config);
    } catch (error) {
      failed = { kind: entry.kind, error };
      break;
    }
  }
  const report = { kinds, heldUsers: heldUsers.size };
  if (failed !== null) {
    await recordFailedPass(ctx, report, failed);
    throw failed.error;
  }
  const counts = Object.values(kinds);
  if (counts.some((count) => count.removed > 0 || count.held > 0))
    await recordAdminCall(ctx, portalCall(HOUSEKEEPING_CALL, auditParameters(report)), 200, null);
  if (stopped !== null) throw stopped.by;
  return report;
}

/**
 * The audit row of a pass a kind's failure ended, when the kinds before it removed anything (a
 * failure that repeats at every pass adds no row of nothing); a database that cannot take the
 * row either is logged, and the kind's own error is what the pass throws.
 */
async function recordFailedPass(
  ctx: PortalContext,
  report: RetentionReport,
  failed: { readonly kind: string; readonly error: unknown },
): Promise<void> {
  if (!Object.values(report.kinds).some((count) => count.removed > 0)) return;
  const why = failed.error instanceof Error ? failed.error.message : String(failed.error);
  try {
    await recordAdminCall(
      ctx,
      portalCall(HOUSEKEEPING_CALL, auditParameters(report)),
      500,
      `stopped at ${failed.kind}: ${why}`.slice(0, 500),
    );
  } catch (error) {
    ctx.logger.error({ err: error, kinds: report.kinds }, 'the housekeeping could not record what it removed');
  }
}

/** `connection_log: "12"`, `connection_log_held: "3"`, … for each kind: the audit row's parameters. */
function auditParameters(report: RetentionReport): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const [kind, count] of Object.entries(report.kinds)) {
    parameters[kind] = String(count.removed);
    parameters[`${kind}_held`] = String(count.held);
  }
  parameters['held_users'] = String(report.heldUsers);
  return parameters;
}
