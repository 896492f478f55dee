// Writes a session's accounting records into the outbox, one row per configured server, in the
// transaction of the session change (the listener) or of the interim claim (the worker): a record
// of a change that happened is sent even when the portal is killed right after, and a change that
// rolled back is never reported.
import type { PortalConfig } from '../../config/portal-config.js';
import { canonicalAddressOrSame } from '../../net/cidr.js';
import type { AccountingRecord } from '../../protocol/radius.js';
import { timeOrderedId, timeOrderedIdAfter } from '../../shared/time-ordered-id.js';
import { formatAtom } from '../../shared/time.js';
import type { Db } from '../../storage/database.js';
import { insertOutboxRecords, latestQueuedRecordId } from '../../storage/radius-outbox.js';
import {
  insertRadiusSession,
  radiusSessionsOnNode,
  takeOldestRadiusSession,
  updateRadiusSessionRecord,
} from '../../storage/radius-sessions.js';
import type { NodeNumber } from '../../shared/ids.js';
import type { SessionEndCause } from '../events.js';
import { forServer, parseRecord, startRecord, stopRecord, withCounters, type StartedSession } from './records.js';

/**
 * Queues `record` for every server. Its id, which orders the records of a session and of an
 * address (src/storage/radius-outbox.ts, heldBackUntil), follows every record of either still
 * queued: records go in the order they were queued, as within one instance, also when another
 * instance whose clock runs ahead queued the ones before (a Stop on an address, then the next
 * session's Start there queued by an instance behind it would otherwise go first, and a firewall
 * would unmap the new user).
 */
export async function queueRecord(
  db: Db,
  config: PortalConfig,
  record: AccountingRecord,
  connectionId: string,
  at: Date,
): Promise<void> {
  const address = reportedAddress(record);
  const records = [];
  for (const server of config.accounting.radius.servers) {
    const earlier = await latestQueuedRecordId(db, server.address, record.sessionId, address);
    records.push({
      recordId: earlier === null ? timeOrderedId(at.getTime()) : timeOrderedIdAfter(earlier, at.getTime()),
      server: server.address,
      acctSessionId: record.sessionId,
      connectionId,
      address,
      record: JSON.stringify(forServer(record, server)),
      eventAt: formatAtom(at),
    });
  }
  await insertOutboxRecords(db, records);
}

/** The tunnel address a record reports, as its records are ordered by: IPv4, else IPv6. */
function reportedAddress(record: AccountingRecord): string | null {
  const address = record.framedIpAddress ?? record.framedIpv6Address;
  return address === null ? null : canonicalAddressOrSame(address);
}

/** A session opened: its row (the first Interim-Update due one interval later) and its Start. */
export async function accountSessionStart(
  db: Db,
  config: PortalConfig,
  connectionId: string,
  session: StartedSession,
): Promise<void> {
  const record = startRecord(config, session);
  await insertRadiusSession(db, {
    acctSessionId: session.acctSessionId,
    connectionId,
    nodeNumber: session.nodeNumber,
    startRecord: JSON.stringify(record),
    startedAt: formatAtom(session.at),
    nextInterimAt: formatAtom(new Date(session.at.getTime() + config.accounting.radius.interimIntervalMs)),
  });
  await queueRecord(db, config, record, connectionId, session.at);
}

/** The session that ended, as its start recorded it: its tunnel address and its start (ATOM). */
export interface EndedSession {
  readonly ipFour: string;
  readonly connectedAt: string;
}

/**
 * A session closed: the Stop of the RADIUS session of the configuration on the node that began
 * when it did (its row's start is the session's), on its tunnel address, and its row goes. An
 * OpenVPN client may reconnect before the node reports the first connection's end, and its new
 * connection may end first: its Stop names its own session, not the older one still open. An
 * end announced twice (a node's report repeated, two instances ending the same session) finds
 * its row gone and stops nothing, not the client's newer session on the same address. Nothing
 * either when the portal did not account for its start. Only an end that does not say which
 * session it was (`ended` null) stops the configuration's oldest open session on the node.
 */
export async function accountSessionEnd(
  db: Db,
  config: PortalConfig,
  connectionId: string,
  nodeNumber: NodeNumber,
  end: { readonly at: Date; readonly bytesIn: number; readonly bytesOut: number; readonly cause: SessionEndCause },
  ended: EndedSession | null = null,
): Promise<void> {
  const address = ended === null || ended.ipFour === '' ? null : canonicalAddressOrSame(ended.ipFour);
  const session = await takeOldestRadiusSession(db, connectionId, nodeNumber, (open) => {
    if (ended !== null && open.startedAt !== ended.connectedAt) return false;
    const framed = parseRecord(open.startRecord).framedIpAddress;
    return address === null || (framed !== null && canonicalAddressOrSame(framed) === address);
  });
  if (session === undefined) return;
  const record = stopRecord(parseRecord(session.startRecord), new Date(session.startedAt), end);
  await queueRecord(db, config, record, connectionId, end.at);
}

/**
 * A pass observed the node's counters of its peers (by configuration): the open sessions on the
 * node keep the latest for their Interim-Updates. A row is written only when its counters moved;
 * nothing at all without RADIUS servers.
 */
export async function noteSessionCounters(
  db: Db,
  config: PortalConfig,
  nodeNumber: NodeNumber,
  counters: ReadonlyMap<string, { readonly bytesIn: number; readonly bytesOut: number }>,
): Promise<void> {
  if (config.accounting.radius.servers.length === 0 || counters.size === 0) return;
  for (const session of await radiusSessionsOnNode(db, nodeNumber)) {
    const observed = counters.get(session.connectionId);
    if (observed === undefined) continue;
    const record = parseRecord(session.startRecord);
    if (record.inputOctets === observed.bytesIn && record.outputOctets === observed.bytesOut) continue;
    await updateRadiusSessionRecord(db, session.acctSessionId, JSON.stringify(withCounters(record, observed)));
  }
}
