// Drops the kept `create` answers (Idempotency-Key, src/http/admin-api/idempotency.ts) of the
// configurations a change revokes — deleted (delete_connection, destroy, a device retired or
// replaced), expired, or taken off their nodes with their disabled user — as the change's closing
// write, in its transaction: a revoked file's private key is not kept a moment longer, and a retry
// with the key is refused. The retry reads the configuration's state itself too, so an expiry
// the reconcile pass has not swept yet is refused as well.
import type { PortalEvent, PortalEvents } from '../core/events.js';
import type { ClosingWrite } from '../storage/closing-writes.js';

export function dropRevokedKeptAnswers(events: PortalEvents): void {
  events.closing((announced) => {
    const connectionIds = [...new Set(announced.flatMap(revokedBy))];
    return connectionIds.length === 0 ? [] : [{ kind: 'kept-answers-revoked', connectionIds } satisfies ClosingWrite];
  });
}

/** The configurations an event revokes for good. A suspended device's come back when it is resumed: not these. */
function revokedBy(event: PortalEvent): string[] {
  switch (event.type) {
    case 'configuration.deleted':
    case 'configuration.expired':
      return [event.configuration.connectionId];
    case 'user.disabled':
      return event.configurations.map((configuration) => configuration.connectionId);
    default:
      return [];
  }
}
