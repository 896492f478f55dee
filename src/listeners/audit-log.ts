// The audit log (`audit_log`): one row per Admin API call that changed something — written in
// the transaction of that change, so a recorded change really happened and a change that
// happened is recorded — and per call that failed or changed nothing. Refusals (401, 403) are
// coalesced: the first of a source (an IPv6 client by its /64) and a reason in a minute is a
// row, the further ones count into its `repeated`, so a flood of bad keys costs a bounded
// number of rows and hides nothing. The seam tells it who made the call (src/core/events.ts,
// `admin.call`); the row holds the key's name, never the key, and the call's parameters, never
// a file or a private key.
import { callerName } from '../core/admin-call.js';
import type { PortalEvent, PortalEvents } from '../core/events.js';
import { clientNetwork } from '../net/client-network.js';
import { insertAuditRecord, insertOrCountRefusal, newAuditId, type NewAuditRecord } from '../storage/audit-log.js';
import { formatAtom } from '../shared/time.js';

const MINUTE_MS = 60_000;

export function writeAuditLog(events: PortalEvents): void {
  // A call that changed something: its row is a closing write of the change, which a create
  // makes part of its final statement (src/core/events.ts).
  events.closing((announced) => {
    const event = announced.find((candidate) => candidate.type === 'admin.call');
    if (event?.type !== 'admin.call' || isRefusal(event.status)) return [];
    return [{ kind: 'audit-record', record: auditRecord(event) }];
  });
  // A call recorded on its own (refused, failed, or nothing to do), outside any change.
  events.inTransaction(async (event, db) => {
    if (event.type !== 'admin.call') return;
    if (!isRefusal(event.status)) {
      if (!db.isTransaction) await insertAuditRecord(db, auditRecord(event));
      return;
    }
    // The reason: the status, the key named (if any) and why; the call and its parameters are
    // the first refusal's (a scan of many paths with one bad key is one row a minute).
    await insertOrCountRefusal(db, auditRecord(event), {
      minute: Math.floor(event.at.getTime() / MINUTE_MS) * MINUTE_MS,
      source: clientNetwork(event.call.caller.sourceAddress),
      reason: JSON.stringify([event.status, callerName(event.call.caller), event.detail]),
    });
  });
}

/** The answers a flood of requests gives: counted into one row per minute, source and reason. */
function isRefusal(status: number): boolean {
  return status === 401 || status === 403 || status === 429 || status === 503;
}

function auditRecord(event: Extract<PortalEvent, { type: 'admin.call' }>): NewAuditRecord {
  const { call } = event;
  return {
    auditId: newAuditId(event.at),
    at: formatAtom(event.at),
    keyName: callerName(call.caller),
    sourceAddress: call.caller.sourceAddress,
    call: call.name,
    parameters: call.parameters,
    status: event.status,
    userId: call.parameters['user_id'] ?? event.userId ?? null,
    connectionIds: event.connectionIds,
    detail: event.detail,
  };
}
