// Session events found by one look at a node, announced a few hundred per change: a busy node
// seen for the first time (or after a restart of the portal) has every online device start a
// session at once, 65,536 on a full wireguard-go node; in short transactions, not one long one.
// Each session is announced once, by the change that writes its history row: an end only by the
// change that closes the row, a WireGuard start only by the change that opens it. A session
// another change ended or began since it was read (a node's disconnect report and its retry, two
// portal instances or two passes that both saw it) is not announced again, so webhooks, syslog,
// RADIUS and metrics hear of it once, and a second stop never follows the next session on the address.
import type { PortalEvents, PortalEvent } from '../events.js';
import { canonicalAddressOrSame } from '../../net/cidr.js';
import { formatAtom } from '../../shared/time.js';
import type { Db } from '../../storage/database.js';
import { lockOpenSessionRows, type OpenSessionRow } from '../../storage/connection-log.js';

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
      const due = await withoutRepeats(trx, batch);
      await announce(due);
      return due.filter((event) => event.type === 'session.ended').length;
    });
  }
  return ended;
}

/**
 * The events less those another change announced already, read in the change that announces
 * them (whose connection log listener writes the rows; on PostgreSQL the rows stay locked until
 * it commits, so a change writing them meanwhile is waited for): the end of a session whose row
 * is closed, and the start of a WireGuard session whose configuration has an open row on the node
 * that no end here closes (a node has at most one open WireGuard session of a configuration).
 * An end without its start's record has no row to tell: it stays.
 */
async function withoutRepeats(trx: Db, events: readonly PortalEvent[]): Promise<readonly PortalEvent[]> {
  const connections = events.flatMap((event) => {
    if (event.type === 'session.ended') return event.session === null ? [] : [event.connectionId];
    if (event.type === 'session.started' && event.configuration.vpnProto === 'wireguard')
      return [event.configuration.connectionId];
    return [];
  });
  if (connections.length === 0) return events;
  const open = await lockOpenSessionRows(trx, connections);
  const openRows = new Set(open.map(rowKey));
  const endedRow = (event: PortalEvent): string | null =>
    event.type === 'session.ended' && event.session !== null
      ? rowKey({
          ...event,
          ipFour: canonicalAddressOrSame(event.session.ipFour),
          connectedAt: event.session.connectedAt,
        })
      : null;
  const closedHere = new Set(
    events.flatMap((event) => {
      const row = endedRow(event);
      return row !== null && openRows.has(row) && event.type === 'session.ended'
        ? [nodeKey(event.connectionId, event.nodeNumber)]
        : [];
    }),
  );
  const openWireGuard = new Set(
    open.filter((row) => row.vpnProto === 'wireguard').map((row) => nodeKey(row.connectionId, row.nodeNumber)),
  );
  const startDue = (event: Extract<PortalEvent, { type: 'session.started' }>): boolean => {
    if (event.configuration.vpnProto !== 'wireguard') return true;
    const key = nodeKey(event.configuration.connectionId, event.configuration.nodeNumber);
    return !openWireGuard.has(key) || closedHere.has(key);
  };
  // A session that began and ended while no pass looked: its end closes the row its start here opens.
  const openedHere = new Set(
    events.flatMap((event) =>
      event.type === 'session.started' && startDue(event)
        ? [
            rowKey({
              connectionId: event.configuration.connectionId,
              nodeNumber: event.configuration.nodeNumber,
              ipFour: canonicalAddressOrSame(event.ipFour),
              connectedAt: formatAtom(event.at),
            }),
          ]
        : [],
    ),
  );
  return events.filter((event) => {
    if (event.type === 'session.started') return startDue(event);
    const row = endedRow(event);
    return row === null || openRows.has(row) || openedHere.has(row);
  });
}

function rowKey(row: Pick<OpenSessionRow, 'connectionId' | 'nodeNumber' | 'ipFour' | 'connectedAt'>): string {
  return JSON.stringify([row.connectionId, row.nodeNumber, row.ipFour, row.connectedAt]);
}

function nodeKey(connectionId: string, nodeNumber: number): string {
  return `${nodeNumber}:${connectionId}`;
}
