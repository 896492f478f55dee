// The audit log of the Admin API: reading it (GET /audit_log, `vpn-portal audit`) and recording
// the calls that changed nothing (refused, failed, or nothing to do: the calls that changed
// something are recorded in their own transaction, see src/core/events.ts). The daily
// housekeeping prunes it after `auditLogRetention` (src/core/reconcile/housekeeping.ts).
import type { AuditEntry, AuditLogPage } from '../../protocol/admin-api.js';
import { auditRecords, type AuditRecord } from '../../storage/audit-log.js';
import type { AdminCall } from '../admin-call.js';
import { asUserId } from '../../shared/ids.js';
import type { PortalContext } from '../context.js';

/** Entries per page of GET /audit_log unless `limit` says otherwise. */
export const DEFAULT_AUDIT_PAGE = 100;
export const MAX_AUDIT_PAGE = 1000;

/**
 * Records a call that changed nothing, with the status it was answered. Through the portal's
 * own seam (not the call's view), so it is recorded once, by the audit listener like any other.
 * Without a transaction: there is no change to be atomic with, and a refusal counted into its
 * row (src/listeners/audit-log.ts) then holds that row's lock for one statement, not for the
 * round trips to a COMMIT, so a flood from many clients and instances does not queue on it.
 */
export async function recordAdminCall(
  ctx: Pick<PortalContext, 'db' | 'events' | 'clock'>,
  call: AdminCall,
  status: number,
  detail: string | null,
): Promise<void> {
  const event = { type: 'admin.call', at: ctx.clock.now(), call, status, detail, connectionIds: [] } as const;
  await ctx.events.record(ctx.db, event);
  ctx.events.publish(event);
}

/**
 * Records a look-up of people by address (attribution, connection_log with `ip`) with what it
 * answered: the call's parameters hold its `reason`; the row names the user found when the
 * answer named exactly one.
 */
export async function recordLookup(
  ctx: PortalContext,
  call: AdminCall,
  status: number,
  detail: string | null,
  usersFound: readonly string[],
): Promise<void> {
  const users = new Set(usersFound);
  const [only] = users;
  const event = {
    type: 'admin.call',
    at: ctx.clock.now(),
    call,
    status,
    detail,
    connectionIds: [],
    ...(users.size === 1 && only !== undefined ? { userId: asUserId(only) } : {}),
  } as const;
  await ctx.events.record(ctx.db, event);
  ctx.events.publish(event);
}

export interface AuditQuery {
  /** ATOM: entries at or after. */
  readonly since?: string;
  /** ATOM: entries before. */
  readonly until?: string;
  readonly keyName?: string;
  readonly userId?: string;
  /** The `next_cursor` of the page before. */
  readonly cursor?: string;
  readonly limit?: number;
}

/** One page, newest first, with the cursor of the next (older) page. */
export async function readAuditLog(ctx: PortalContext, query: AuditQuery): Promise<AuditLogPage> {
  const limit = Math.min(Math.max(query.limit ?? DEFAULT_AUDIT_PAGE, 1), MAX_AUDIT_PAGE);
  const rows = await auditRecords(ctx.db, {
    ...(query.since === undefined ? {} : { since: query.since }),
    ...(query.until === undefined ? {} : { until: query.until }),
    ...(query.keyName === undefined ? {} : { keyName: query.keyName }),
    ...(query.userId === undefined ? {} : { userId: query.userId }),
    ...(query.cursor === undefined ? {} : { before: query.cursor }),
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { audit_log: page.map(toEntry), next_cursor: rows.length > limit && last !== undefined ? last.auditId : null };
}

function toEntry(record: AuditRecord): AuditEntry {
  return {
    id: record.auditId,
    at: record.at,
    key_name: record.keyName,
    source_address: record.sourceAddress,
    call: record.call,
    parameters: { ...record.parameters },
    status: record.status,
    user_id: record.userId,
    connection_ids: [...record.connectionIds],
    detail: record.detail,
    repeated: record.repeated,
  };
}
