// Session events found by one look at a node, announced a few hundred per change: a busy node
// seen for the first time (or after a restart of the portal) has every online device start a
// session at once, 65,536 on a full wireguard-go node; in short transactions, not one long one.
import type { PortalEvents, PortalEvent } from '../events.js';
import type { Db } from '../../storage/database.js';

/** Events per change: one transaction each, so a busy node's sessions are not one long write. */
const EVENTS_PER_CHANGE = 500;

/** Announces `events` in changes of EVENTS_PER_CHANGE; each is a session of its own, so a part may commit without the rest. */
export async function announceSessions(events: PortalEvents, db: Db, announced: readonly PortalEvent[]): Promise<void> {
  for (let start = 0; start < announced.length; start += EVENTS_PER_CHANGE) {
    const batch = announced.slice(start, start + EVENTS_PER_CHANGE);
    await events.change(db, async (_trx, announce) => announce(batch));
  }
}
