// The audit log (`audit_log`): one row per Admin API call that changed something — written in
// the transaction of that change, so a recorded change really happened and a change that
// happened is recorded — and per call that was refused, failed or changed nothing. The seam
// tells it who made the call (src/core/events.ts, `admin.call`); the row holds the key's name,
// never the key, and the call's parameters, never a file or a private key.
import type { PortalEvents } from '../core/events.js';
import { insertAuditRecord, newAuditId } from '../storage/audit-log.js';
import { formatAtom } from '../shared/time.js';

export function writeAuditLog(events: PortalEvents): void {
  events.inTransaction(async (event, db) => {
    if (event.type !== 'admin.call') return;
    const { call } = event;
    await insertAuditRecord(db, {
      auditId: newAuditId(event.at),
      at: formatAtom(event.at),
      keyName: call.caller.keyName,
      sourceAddress: call.caller.sourceAddress,
      call: call.name,
      parameters: call.parameters,
      status: event.status,
      userId: call.parameters['user_id'] ?? null,
      connectionIds: event.connectionIds,
      detail: event.detail,
    });
  });
}
