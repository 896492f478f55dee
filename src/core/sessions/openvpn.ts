// What a node asks when an OpenVPN client connects or disconnects (reference §1.2, §8.5):
// a connect is allowed only for a known, unexpired configuration of an enabled user (and of a
// device not suspended), made for this profile on this node. Allowed connects and their disconnects are announced as
// session events (the connection log is one of their listeners).
import { findProfile } from '../../config/portal-config.js';
import { findCertificate, type OpenVpnCertificate } from '../../storage/certificates.js';
import {
  lockEarlierHoldersOfAddress,
  lockSessionRow,
  nextSessionOnAddress,
  openOpenVpnSessionsBefore,
  recordLateCounters,
  reportedSessionOf,
  type OpenSession,
  type ReportedSession,
} from '../../storage/connection-log.js';
import type { Db } from '../../storage/database.js';
import { deviceIdOfConfiguration, findDevice } from '../../storage/devices.js';
import { findUser } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { ListenerRefusal, type PortalEvent } from '../events.js';
import type { NodeNumber } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { canonicalAddressOrSame, clientAddressOrSame } from '../../net/cidr.js';
import { announceSessions } from './announce-sessions.js';
import { sessionEnded } from './session-ended.js';

export interface OpenVpnConnect {
  readonly nodeNumber: NodeNumber;
  /** The profile of the OpenVPN process the client reached (the node's own knowledge). */
  readonly profileId: string;
  readonly commonName: string;
  readonly originatingIp: string | null;
  readonly ipFour: string;
  readonly ipSix: string;
  /** A renegotiation of a client already connected: decided again, but not a new connection. */
  readonly reauth: boolean;
  /**
   * Aborted once the node stopped waiting for the answer (its agent then refused the client):
   * a connect the connect script held up past that opens no session.
   */
  readonly nodeGaveUp: AbortSignal;
}

export type ConnectDecision = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

export async function authorizeOpenVpnConnect(ctx: PortalContext, connect: OpenVpnConnect): Promise<ConnectDecision> {
  const decision = await decide(ctx, connect);
  if (!decision.allowed) {
    ctx.logger.info(
      {
        nodeNumber: connect.nodeNumber,
        profileId: connect.profileId,
        connectionId: connect.commonName,
        reason: decision.reason,
      },
      'OpenVPN connect refused',
    );
  }
  return decision;
}

/** The configuration the client connects with, when it may: known, unexpired, of an enabled user and a device not suspended. */
async function validConfiguration(
  ctx: PortalContext,
  connect: OpenVpnConnect,
  now: Date,
): Promise<
  { readonly allowed: true; readonly certificate: OpenVpnCertificate } | Extract<ConnectDecision, { allowed: false }>
> {
  const certificate = await findCertificate(ctx.db, connect.commonName);
  if (certificate === undefined)
    return { allowed: false, reason: 'no such configuration (deleted, expired or never made)' };
  if (certificate.profileId !== connect.profileId)
    return { allowed: false, reason: `configuration is for profile "${certificate.profileId}"` };
  if (certificate.nodeNumber !== connect.nodeNumber)
    return { allowed: false, reason: `configuration is for node ${certificate.nodeNumber}` };
  if (certificate.expiresAt <= formatAtom(now)) return { allowed: false, reason: 'configuration expired' };
  const profile = findProfile(ctx.config, certificate.profileId);
  if (!(profile?.nodes.some((node) => node.nodeNumber === connect.nodeNumber && node.openVpn !== null) ?? false)) {
    return { allowed: false, reason: 'the profile no longer runs OpenVPN on this node' };
  }
  const user = await findUser(ctx.db, certificate.userId);
  if (user === undefined || user.isDisabled) return { allowed: false, reason: 'user disabled' };
  const deviceId = await deviceIdOfConfiguration(ctx.db, 'openvpn', certificate.commonName);
  const device = deviceId === null ? undefined : await findDevice(ctx.db, deviceId);
  if (device?.state === 'suspended') return { allowed: false, reason: 'device suspended' };
  return { allowed: true, certificate };
}

async function decide(ctx: PortalContext, connect: OpenVpnConnect): Promise<ConnectDecision> {
  const now = ctx.clock.now();
  const valid = await validConfiguration(ctx, connect, now);
  if (!valid.allowed) return valid;
  const { certificate } = valid;
  if (connect.reauth) return { allowed: true };
  const started: PortalEvent = {
    type: 'session.started',
    at: now,
    configuration: {
      userId: certificate.userId,
      profileId: certificate.profileId,
      connectionId: certificate.commonName,
      vpnProto: 'openvpn',
      nodeNumber: connect.nodeNumber,
    },
    ipFour: connect.ipFour,
    ipSix: connect.ipSix,
    // As it is stored: an IPv4 client IPv4-mapped by a dual-stack socket is its IPv4 address.
    originatingIp: connect.originatingIp === null ? null : clientAddressOrSame(connect.originatingIp),
  };
  // Asked again once the connect script said yes: a disable, delete or suspension that committed
  // while it ran (seconds, perhaps) may have found no node to tell, and the client is not let in.
  const recheck: { refusal: ConnectDecision | null } = { refusal: null };
  const stillAllowed = async (): Promise<boolean> => {
    const again = await validConfiguration(ctx, connect, ctx.clock.now());
    if (!again.allowed) recheck.refusal = again;
    return again.allowed;
  };
  try {
    const ended = (trx: Db) => earlierHoldersEnded(ctx, trx, started);
    if (!(await ctx.events.changeUnlessCalledOff(ctx.db, started, connect.nodeGaveUp, stillAllowed, ended)))
      return recheck.refusal ?? { allowed: false, reason: 'the node stopped waiting for the answer' };
  } catch (error) {
    if (error instanceof ListenerRefusal) return { allowed: false, reason: error.message };
    throw error;
  }
  ctx.logger.info(
    {
      userId: certificate.userId,
      profileId: certificate.profileId,
      connectionId: certificate.commonName,
      nodeNumber: connect.nodeNumber,
      ipFour: connect.ipFour,
      ipSix: connect.ipSix,
    },
    'OpenVPN client connected',
  );
  return { allowed: true };
}

/**
 * The ends of the open sessions on the address a connect was given, to be announced in its
 * change before its start: the node freed the address before it gave it away, so they are over,
 * their end not heard (lost, or its report still coming). That holds for another
 * configuration's session and for the connecting configuration's own older connection alike (a
 * client back at once on its address, the old connection's report behind its connect). Each ends
 * as `replaced` when the new session began, so its Stop (RADIUS, syslog, webhooks) comes before
 * the new session's Start and an address is never left mapped to the wrong user or to no one,
 * nor a user still connected unmapped by a Stop after their Start. Its counters are not known
 * then (the Stop carries none; its history row keeps them null): a disconnect report of it that
 * comes after writes them into its row, and ends nothing else.
 */
async function earlierHoldersEnded(
  ctx: PortalContext,
  trx: Db,
  started: Extract<PortalEvent, { type: 'session.started' }>,
): Promise<PortalEvent[]> {
  const { configuration } = started;
  if (started.ipFour === '') return [];
  const holders = await lockEarlierHoldersOfAddress(
    trx,
    configuration.nodeNumber,
    started.ipFour,
    formatAtom(started.at),
  );
  if (holders.length > 0)
    ctx.logger.info(
      { nodeNumber: configuration.nodeNumber, ipFour: started.ipFour, sessions: holders.length },
      'OpenVPN address given to a new connection while an older session still held it: that one ends first, its counters to come with its disconnect report',
    );
  return holders.map((session) => sessionEnded('openvpn', session, started.at, 0, 0, 'replaced'));
}

export interface OpenVpnDisconnect {
  readonly nodeNumber: NodeNumber;
  readonly commonName: string;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** The client's tunnel address, when the node says it: tells two open sessions of one certificate apart. */
  readonly ipFour?: string;
  /**
   * How long before the report the portal admitted the connection (ms, the node's clock), when
   * the node says it: a session that began later is not this connection's.
   */
  readonly ageMs?: number;
}

/**
 * Announces the end of an open session of this node; the configuration itself may be gone
 * already. Without one (never connected here, already ended as lost, another node's
 * certificate) nothing is announced: no webhook, connect script, syslog line or RADIUS stop. A
 * session the connect of the next session on its address ended already (its end announced
 * then) gets the report's counters in its history row, and nothing is announced again.
 */
export async function recordOpenVpnDisconnect(ctx: PortalContext, disconnect: OpenVpnDisconnect): Promise<void> {
  const session = await reportedSessionOf(
    ctx.db,
    disconnect.commonName,
    disconnect.nodeNumber,
    disconnect.ipFour,
    startedBy(disconnect.ageMs, ctx.clock.now()),
  );
  if (session === undefined) {
    ctx.logger.info(
      { connectionId: disconnect.commonName, nodeNumber: disconnect.nodeNumber },
      'OpenVPN disconnect of no open session on this node: nothing to end',
    );
    return;
  }
  const ended: PortalEvent = {
    type: 'session.ended',
    at: await endedBy(ctx, session, ctx.clock.now()),
    connectionId: disconnect.commonName,
    vpnProto: 'openvpn',
    nodeNumber: disconnect.nodeNumber,
    bytesIn: disconnect.bytesIn,
    bytesOut: disconnect.bytesOut,
    cause: 'disconnected',
    session: {
      userId: session.userId,
      profileId: session.profileId,
      ipFour: session.ipFour,
      ipSix: session.ipSix,
      originatingIp: session.originatingIp,
      connectedAt: session.connectedAt,
    },
  };
  const outcome = await endReported(ctx, session, ended, disconnect);
  const { commonName: connectionId, nodeNumber } = disconnect;
  if (outcome === 'ended') ctx.logger.info({ connectionId, nodeNumber }, 'OpenVPN client disconnected');
  else if (outcome === 'counted')
    ctx.logger.info(
      { connectionId, nodeNumber, connectedAt: session.connectedAt },
      'OpenVPN disconnect of a session ended when the node gave its address to the next connection: its counters recorded',
    );
  else
    ctx.logger.info(
      { connectionId, nodeNumber },
      'OpenVPN disconnect of a session ended meanwhile (a report repeated, another instance): nothing to end',
    );
}

/**
 * Ends the session a disconnect report tells of, or records the report's counters for it, in
 * one change that reads its row (by its id: a newer session of the configuration on the address
 * may have begun in the same second). Open: its end is announced, and the history's row closes
 * with the RADIUS Stop and the webhook's delivery, or none of them does and the node's report
 * fails (it reports again); recorded piece by piece, a failure after the row closed left the
 * session ended there, and the report again found nothing to end: no Stop, no syslog stop, no
 * webhook, ever. Closed by the connect of the next session on its address (before the report or
 * while it was read), without counters: they are written into its row, and nothing is announced
 * again (its end was, before that session's start). Closed otherwise (a retry of this report,
 * another instance's end of the session, a reconcile pass): nothing.
 */
async function endReported(
  ctx: PortalContext,
  session: ReportedSession,
  ended: PortalEvent,
  disconnect: OpenVpnDisconnect,
): Promise<'ended' | 'counted' | 'none'> {
  return ctx.events.change(ctx.db, async (trx, announce) => {
    const row = await lockSessionRow(trx, session.logId);
    if (row === undefined) return 'none';
    if (row.open) {
      await announce([ended]);
      return 'ended';
    }
    if (row.counted) return 'none';
    return (await recordLateCounters(trx, session.logId, disconnect.bytesIn, disconnect.bytesOut)) ? 'counted' : 'none';
  });
}

/**
 * Leeway for a node's clock that ran faster than the portal's while the connection lasted (an
 * age too long would reach back past the session's start): a second, and a thousandth of the
 * age (far more than NTP-disciplined clocks drift apart).
 */
const AGE_LEEWAY_MS = 1_000;
const AGE_LEEWAY_PER_MS = 0.001;

/**
 * The latest start (ATOM) of the session a node's disconnect report may end: the portal admitted
 * the connection `ageMs` before the report by the node's clock, after it recorded the session's
 * start (the node measures from the portal's answer). A report repeated after the client's next
 * connection began, on the same address, does not reach back to that newer session. Measured
 * as an age, not a time of day, so a node's clock set wrong moves nothing.
 */
function startedBy(ageMs: number | undefined, now: Date): string | undefined {
  if (ageMs === undefined) return undefined;
  const leeway = AGE_LEEWAY_MS + ageMs * AGE_LEEWAY_PER_MS;
  return formatAtom(new Date(now.getTime() - ageMs + leeway));
}

/**
 * A session is judged by a node's list only once it is this old: a client the portal has just
 * let in may not be in the node's list yet while its connect finishes.
 */
const LIST_SETTLE_MS = 60_000;

/**
 * A session missing from a node's list is ended as lost only when a listing this long after
 * the first that missed it misses it still: the node's disconnect report of a client the
 * portal has just disconnected (disable, delete, expiry) may be a moment behind its list, and
 * it brings the session's counters and its true cause.
 */
export const DISCONNECT_REPORT_GRACE_MS = 30_000;

/**
 * Ends, as lost, the open OpenVPN sessions of a node that its client list (read at `listedAt`)
 * no longer shows, and has not shown for DISCONNECT_REPORT_GRACE_MS: their disconnect was
 * never reported (a node or agent that crashed, a report that failed twice). Without this they
 * would stay open for ever: online in the listings, attributed their address, never stopped in
 * RADIUS. Each ends when the first listing missed it (or, if earlier, when the node gave its
 * address to a newer session); its counters went with it.
 */
export async function endUnlistedOpenVpnSessions(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  listed: readonly { readonly commonName: string; readonly ipFour: string }[],
  listedAt: Date,
): Promise<number> {
  const settled = formatAtom(new Date(listedAt.getTime() - LIST_SETTLE_MS));
  const onNode = new Set(listed.map((client) => sessionKey(client.commonName, canonicalAddressOrSame(client.ipFour))));
  const missed = (await openOpenVpnSessionsBefore(ctx.db, nodeNumber, settled)).filter(
    (session) => !onNode.has(sessionKey(session.connectionId, session.ipFour)),
  );
  // Remembered by the session's own start too: a client that comes back on the same address is
  // a new session, with its own wait.
  const rememberedAs = (session: OpenSession) =>
    `${sessionKey(session.connectionId, session.ipFour)} ${session.connectedAt}`;
  const due = ctx.unlistedSessions.missedFor(
    nodeNumber,
    missed.map(rememberedAs),
    listedAt,
    DISCONNECT_REPORT_GRACE_MS,
  );
  const events: PortalEvent[] = [];
  for (const session of missed) {
    const since = due.get(rememberedAs(session));
    if (since !== undefined)
      events.push(sessionEnded('openvpn', session, await endedBy(ctx, session, since), 0, 0, 'lost'));
  }
  if (events.length === 0) return 0;
  // Those another change ended meanwhile (a disconnect report that came late) are not ended again.
  const ended = await announceSessions(ctx.events, ctx.db, events);
  if (ended === 0) return 0;
  ctx.logger.info(
    { nodeNumber, sessions: ended },
    `ended ${ended} OpenVPN session(s) node ${nodeNumber} no longer lists, whose disconnect was never reported`,
  );
  return ended;
}

/**
 * When a session heard to end at `at` ended at the latest: when the node gave its address to a
 * newer session, if that was earlier (an end reported late, or a lost one first missed by a
 * listing after the node had given the address away). Else `at`.
 */
async function endedBy(ctx: PortalContext, session: OpenSession, at: Date): Promise<Date> {
  if (session.ipFour === '') return at;
  const next = await nextSessionOnAddress(ctx.db, session.nodeNumber, session.ipFour, session.connectedAt);
  return next !== undefined && Date.parse(next) < at.getTime() ? new Date(next) : at;
}

function sessionKey(commonName: string, ipFour: string): string {
  return `${commonName} ${ipFour}`;
}
