// Session events found by one look at a node, announced a few hundred per change: a busy node
// seen for the first time (or after a restart of the portal) has every online device start a
// session at once, 65,536 on a full wireguard-go node; in short transactions, not one long one.
// An end is announced only by the change that closes its session's history row: a session
// another change ended since it was read (a node's disconnect report and its retry, two portal
// instances that both heard of the end) is not announced again, so webhooks, syslog and metrics
// hear each end once, and a second stop never follows the next session on the address.
import type { PortalEvents, PortalEvent } from '../events.js';
import type { Db } from '../../storage/database.js';
import { sessionsStillOpen } from '../../storage/connection-log.js';

/** Events per change: one transaction each, so a busy node's sessions are not one long write. */
const EVENTS_PER_CHANGE = 500;

/**
 * Announces `events` in changes of EVENTS_PER_CHANGE; each is a session of its own, so a part may
 * commit without the rest. Answers how many ends were announced: those whose session was still open.
 */
export async function announceSessions(
  events: PortalEvents,
  db: Db,
  announced: readonly PortalEvent[],
): Promise<number> {
  let ended = 0;
  for (let start = 0; start < announced.length; start += EVENTS_PER_CHANGE) {
    const batch = announced.slice(start, start + EVENTS_PER_CHANGE);
    ended += await events.change(db, async (trx, announce) => {
      const due = await withoutEndedSessions(trx, batch);
      await announce(due);
      return due.filter((event) => event.type === 'session.ended').length;
    });
  }
  return ended;
}

/**
 * The events less the ends of sessions whose history row is closed already, read in the change
 * that announces them (and whose connection log listener closes the rows): on PostgreSQL the rows
 * stay locked until it commits, so an end another change is recording meanwhile is waited for.
 * An end without its start's record has no row to tell: it stays.
 */
async function withoutEndedSessions(trx: Db, events: readonly PortalEvent[]): Promise<readonly PortalEvent[]> {
  const ends = events.flatMap((event) =>
    event.type === 'session.ended' && event.session !== null
      ? [
          {
            event,
            connectionId: event.connectionId,
            nodeNumber: event.nodeNumber,
            ipFour: event.session.ipFour,
            connectedAt: event.session.connectedAt,
          },
        ]
      : [],
  );
  if (ends.length === 0) return events;
  const open = await sessionsStillOpen(trx, ends);
  if (open.length === ends.length) return events;
  const closed = new Set<PortalEvent>(ends.map((end) => end.event));
  for (const end of open) closed.delete(end.event);
  return events.filter((event) => !closed.has(event));
}
