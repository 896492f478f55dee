// What each RADIUS accounting record of a session says: the Start from the session's start (its
// user, addresses, node, profile and device), the Interim-Update and the Stop from that Start with
// the time since and, for the Stop, the counters and why it ended. Records are kept as data
// (src/protocol/radius.ts's AccountingRecord) in the outbox; the Identifier, the authenticator
// and Acct-Delay-Time are the sender's, made anew at every transmission.
import { findProfile, type PortalConfig, type RadiusServer } from '../../config/portal-config.js';
import { isIpAddress } from '../../net/ip-prefix.js';
import { accountingRecordSchema, type AccountingRecord, type TerminateCause } from '../../protocol/radius.js';
import type { NodeNumber } from '../../shared/ids.js';
import type { SessionEndCause } from '../events.js';

/** A session's start as the accounting records need it. */
export interface StartedSession {
  readonly acctSessionId: string;
  readonly userId: string;
  readonly profileId: string;
  readonly deviceId: string | null;
  readonly nodeNumber: NodeNumber;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly originatingIp: string | null;
  readonly at: Date;
}

const TERMINATE_CAUSE: Record<SessionEndCause, TerminateCause> = {
  idle: 'Idle-Timeout',
  roamed: 'Lost-Carrier',
  removed: 'Admin-Reset',
  lost: 'Lost-Service',
  disconnected: 'User-Request',
  // Its end was not heard: the node gave its address to the next connection.
  replaced: 'Lost-Service',
};

/**
 * The Start record, with the node's host name as NAS-Identifier (a server's own `nasIdentifier`
 * replaces it when the record is queued for that server: `forServer`).
 */
export function startRecord(config: PortalConfig, session: StartedSession): AccountingRecord {
  // The host name clients reach the node by, as the session's profile names it.
  const node = findProfile(config, session.profileId)?.nodes.find((entry) => entry.nodeNumber === session.nodeNumber);
  return {
    statusType: 'Start',
    sessionId: session.acctSessionId,
    // Whole, as the audit row of a dropped record names the user: the encoder cuts it to 253 octets.
    userName: session.userId,
    framedIpAddress: addressOrNull(session.ipFour),
    framedIpv6Address: addressOrNull(session.ipSix),
    callingStationId: session.originatingIp === null ? null : addressOrNull(session.originatingIp),
    nasIdentifier: node?.hostName ?? `node-${session.nodeNumber}`,
    nasIpAddress: node === undefined ? null : nasAddress(node.hostName, node.nodeUrl),
    eventTimestamp: unixSeconds(session.at),
    // The profile first, exactly: FortiGate's RSSO matches a user group against this value.
    classes: session.deviceId === null ? [session.profileId] : [session.profileId, `device=${session.deviceId}`],
  };
}

/**
 * The session's record with the node's latest counters (what it received from the client, what it
 * sent), as its Interim-Updates carry them: the same per-peer counters the Stop has.
 */
export function withCounters(
  record: AccountingRecord,
  counters: { readonly bytesIn: number; readonly bytesOut: number },
): AccountingRecord {
  return { ...record, inputOctets: counters.bytesIn, outputOctets: counters.bytesOut };
}

/** An Interim-Update of the session that `start` began, at `now`, with the counters `start` holds (`withCounters`), if any. */
export function interimRecord(start: AccountingRecord, startedAt: Date, now: Date): AccountingRecord {
  return {
    ...start,
    statusType: 'Interim-Update',
    eventTimestamp: unixSeconds(now),
    sessionTime: secondsBetween(startedAt, now),
  };
}

/**
 * The Stop of the session that `start` began, ended at `end.at`, with the counters it ended with
 * or the latest observed (`withCounters`), whichever are higher.
 */
export function stopRecord(
  start: AccountingRecord,
  startedAt: Date,
  end: { readonly at: Date; readonly bytesIn: number; readonly bytesOut: number; readonly cause: SessionEndCause },
): AccountingRecord {
  return {
    ...start,
    statusType: 'Stop',
    eventTimestamp: unixSeconds(end.at),
    sessionTime: secondsBetween(startedAt, end.at),
    // bytes_in is what the node received from the client: the client's input (RFC 2866 §5.3).
    // Never less than an Interim-Update already reported: a session that ended with its peer
    // gone (lost, a removal the node no longer knew) has no counters of its end, and a Stop of
    // 0 would overwrite the server's total for the whole session with nothing.
    inputOctets: Math.max(end.bytesIn, start.inputOctets ?? 0),
    outputOctets: Math.max(end.bytesOut, start.outputOctets ?? 0),
    terminateCause: TERMINATE_CAUSE[end.cause],
  };
}

/** The record as `server` gets it: its own NAS-Identifier when it has one. */
export function forServer(record: AccountingRecord, server: RadiusServer): AccountingRecord {
  return server.nasIdentifier === null ? record : { ...record, nasIdentifier: server.nasIdentifier };
}

/** A record read back from the outbox or a session row. */
export function parseRecord(json: string): AccountingRecord {
  return accountingRecordSchema.parse(JSON.parse(json));
}

/**
 * The node's own address, where the configuration names it by address: its public host name,
 * else the host of its vpn-daemon URL; null when both are names (NAS-Identifier still says which node).
 */
function nasAddress(hostName: string, nodeUrl: string): string | null {
  if (isIpAddress(hostName)) return hostName;
  let host: string;
  try {
    host = new URL(nodeUrl).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return null;
  }
  return isIpAddress(host) ? host : null;
}

function addressOrNull(text: string): string | null {
  return isIpAddress(text) ? text : null;
}

function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}

function secondsBetween(from: Date, to: Date): number {
  return Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000));
}
