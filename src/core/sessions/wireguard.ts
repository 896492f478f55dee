// WireGuard has no connect event, so the reference logs a "connection" at create time, which
// says nothing about who was online when. The portal derives real sessions from what the nodes
// report instead: a session opens at the first handshake after 3 minutes of silence (the
// specification's "online" rule; our agent says when that was, however late the pass), from the
// device's endpoint address (for WireGuard over TCP, the client as the relay saw it); it roams
// (one session ends, the next begins) when the address changes, or when the agent says a new run
// of handshakes began since; it ends 3 minutes after the last handshake, or when the peer is
// removed, with the byte counters; the counters of sessions still open are kept for RADIUS
// Interim-Updates. A run that began and ended while no pass looked (the portal down or cut off
// from the node, a reconcileInterval past 3 minutes) is a session too, from its first handshake
// to 3 minutes after its last, as the node still lists them. Sessions are announced on the
// events seam; the connection log is one of their listeners. A full reconcile pass observes
// every node (one instance at a time).
import { clientAddressOrSame } from '../../net/cidr.js';
import type { DaemonPeer, RemovedPeer } from '../../node-client/daemon-client.js';
import type { NodeNumber } from '../../shared/ids.js';
import { isOnline, ONLINE_THRESHOLD_MS } from '../../shared/online.js';
import {
  lastSessionEnds,
  openWireGuardSessions,
  openWireGuardSessionsOf,
  type OpenSession,
} from '../../storage/connection-log.js';
import { readState, writeState } from '../../storage/portal-state.js';
import { peersWithKeys, type WireGuardPeer } from '../../storage/wg-peers.js';
import { formatAtom } from '../../shared/time.js';
import { noteSessionCounters } from '../accounting/index.js';
import type { PortalContext } from '../context.js';
import { wireGuardConfiguration, type PortalEvent } from '../events.js';
import { announceSessions } from './announce-sessions.js';
import { sessionEnded } from './session-ended.js';

/** Keys per database read. */
const CHUNK = 500;

/** Opens, roams and ends the sessions of one node from its full peer list. */
export async function observeWireGuardSessions(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  peers: readonly DaemonPeer[],
): Promise<void> {
  const now = ctx.clock.now();
  const lookKey = `sessions.looked.${nodeNumber}`;
  const lastLook = await readState(ctx.db, lookKey);
  const open = await openWireGuardSessions(ctx.db, nodeNumber);
  const onNode = new Map(peers.map((peer) => [peer.publicKey as string, peer]));
  const { events, endedBeforeLaterRun } = endedSessions(open, onNode, now);

  const online = peers.filter((peer) => isOnline(peer.lastHandshakeTime, now));
  const starting = online.filter((peer) => {
    const session = open.get(peer.publicKey);
    return session === undefined || roamed(session.originatingIp, peer) || newRunSince(session, peer, now) !== null;
  });
  const configurations = await configurationsOf(
    ctx,
    starting.map((peer) => peer.publicKey),
  );
  const fresh = starting.filter((peer) => !open.has(peer.publicKey));
  const earliest = earliestStarts(fresh, configurations, await lastSessionEndsOf(ctx, keysOfLaterRuns(fresh)));
  for (const peer of starting) {
    const configuration = configurations.get(peer.publicKey);
    // A peer the database does not know is the reconcile's to remove, not a session.
    if (configuration === undefined || configuration.nodeNumber !== nodeNumber) continue;
    const roaming = open.get(peer.publicKey);
    // A run that began after the open session's: the device went quiet and came back while no
    // pass looked (from the same place or another). The session before ended by then at the latest.
    const runStart = roaming === undefined ? null : newRunSince(roaming, peer, now);
    if (roaming !== undefined)
      events.push(
        sessionEnded(
          'wireguard',
          roaming,
          runStart ?? now,
          peer.bytesIn,
          peer.bytesOut,
          runStart !== null ? 'idle' : 'roamed',
        ),
      );
    const origin = originatingAddress(peer.endpoint);
    events.push({
      type: 'session.started',
      at: roaming !== undefined ? (runStart ?? now) : sessionStart(peer, earliest.get(peer.publicKey), now),
      configuration: wireGuardConfiguration(configuration),
      ipFour: configuration.ipFour,
      ipSix: configuration.ipSix,
      originatingIp: origin,
    });
  }
  if (lastLook !== null) {
    const quiet = peers.filter(
      (peer) =>
        (!open.has(peer.publicKey) || endedBeforeLaterRun.has(peer.publicKey)) &&
        !isOnline(peer.lastHandshakeTime, now),
    );
    events.push(...(await missedRuns(ctx, nodeNumber, quiet, Date.parse(lastLook))));
  }
  await announceSessions(ctx.events, ctx.db, events);
  await writeState(ctx.db, lookKey, formatAtom(now));
  // The sessions still open keep the counters for their RADIUS Interim-Updates (nothing without RADIUS).
  const counters = new Map(online.map((peer) => [peer.publicKey as string, peer]));
  await noteSessionCounters(ctx.db, ctx.config, nodeNumber, counters);
}

/**
 * The open sessions that ended: their peer gone from the node, or quiet now. A quiet peer whose
 * run began after its session's (quiet, back and quiet again while no pass looked) ended that
 * session by then at the latest, and its later run is one of missedRuns: those keys are returned.
 */
function endedSessions(
  open: ReadonlyMap<string, OpenSession>,
  onNode: ReadonlyMap<string, DaemonPeer>,
  now: Date,
): { readonly events: PortalEvent[]; readonly endedBeforeLaterRun: ReadonlySet<string> } {
  const events: PortalEvent[] = [];
  const endedBeforeLaterRun = new Set<string>();
  for (const session of open.values()) {
    const peer = onNode.get(session.connectionId);
    if (peer === undefined) {
      // Gone without the portal removing it (a node that lost its peers): the counters went with it.
      events.push(sessionEnded('wireguard', session, now, 0, 0, 'lost'));
    } else if (!isOnline(peer.lastHandshakeTime, now)) {
      const laterRun = newRunSince(session, peer, now);
      if (laterRun !== null) endedBeforeLaterRun.add(session.connectionId);
      const lastSeen =
        laterRun ??
        (peer.lastHandshakeTime === null ? now : new Date(peer.lastHandshakeTime.getTime() + ONLINE_THRESHOLD_MS));
      events.push(sessionEnded('wireguard', session, lastSeen, peer.bytesIn, peer.bytesOut, 'idle'));
    }
  }
  return { events, endedBeforeLaterRun };
}

/**
 * A handshake this long before the node's last look may still have been one that look did not
 * list (the list is read before the look's time is taken); the history tells a run seen then.
 */
const LOOK_MARGIN_MS = 60_000;

/**
 * The runs of quiet peers (no open session, offline now) that began and ended while no pass
 * looked: a handshake since the last look (`lastLook`, epoch ms) that no session in the history
 * reaches (one the portal saw ends at or after its last handshake), of a configuration made by
 * then. Each is a session from its run's first handshake to 3 minutes after its last, with the
 * node's counters: an abuse report of those minutes otherwise named nobody.
 */
async function missedRuns(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  quiet: readonly DaemonPeer[],
  lastLook: number,
): Promise<PortalEvent[]> {
  const since = quiet.filter(
    (peer) => peer.lastHandshakeTime !== null && peer.lastHandshakeTime.getTime() > lastLook - LOOK_MARGIN_MS,
  );
  if (since.length === 0) return [];
  const keys = since.map((peer) => peer.publicKey as string);
  const configurations = await configurationsOf(ctx, keys);
  const ends = await lastSessionEndsOf(ctx, keys);
  const earliest = earliestStarts(since, configurations, ends);
  const events: PortalEvent[] = [];
  for (const peer of since) {
    const configuration = configurations.get(peer.publicKey);
    const last = peer.lastHandshakeTime;
    if (configuration === undefined || configuration.nodeNumber !== nodeNumber || last === null) continue;
    const ended = ends.get(peer.publicKey);
    if (ended !== undefined && Date.parse(ended) >= last.getTime()) continue;
    if (Date.parse(configuration.createdAt) > last.getTime()) continue;
    const start = sessionStart(peer, earliest.get(peer.publicKey), last);
    const originatingIp = originatingAddress(peer.endpoint);
    const ref = wireGuardConfiguration(configuration);
    const session = { ...ref, ipFour: configuration.ipFour, ipSix: configuration.ipSix, originatingIp };
    events.push(
      {
        type: 'session.started',
        at: start,
        configuration: ref,
        ipFour: session.ipFour,
        ipSix: session.ipSix,
        originatingIp,
      },
      sessionEnded(
        'wireguard',
        { ...session, connectedAt: formatAtom(start) },
        new Date(last.getTime() + ONLINE_THRESHOLD_MS),
        peer.bytesIn,
        peer.bytesOut,
        'idle',
      ),
    );
  }
  return events;
}

/** Ends the open sessions of peers the portal just removed, with the counters the node answered. */
export async function endSessionsOfRemovedPeers(
  ctx: PortalContext,
  removed: readonly {
    readonly publicKey: string;
    readonly nodeNumber: NodeNumber;
    readonly answer: RemovedPeer | null;
  }[],
): Promise<void> {
  const byKey = new Map(removed.map((peer) => [`${peer.nodeNumber}:${peer.publicKey}`, peer]));
  const now = ctx.clock.now();
  const events: PortalEvent[] = [];
  for (let start = 0; start < removed.length; start += CHUNK) {
    const keys = removed.slice(start, start + CHUNK).map((peer) => peer.publicKey);
    for (const session of await openWireGuardSessionsOf(ctx.db, keys)) {
      const peer = byKey.get(`${session.nodeNumber}:${session.connectionId}`);
      if (peer === undefined) continue;
      events.push(
        sessionEnded('wireguard', session, now, peer.answer?.bytesIn ?? 0, peer.answer?.bytesOut ?? 0, 'removed'),
      );
    }
  }
  // Called after a call's change was recorded: the sessions it ended are the portal's own record.
  await announceSessions(ctx.events.unbound(), ctx.db, events);
}

/** The device moved: its packets now come from another address. */
function roamed(originatingIp: string | null, peer: DaemonPeer): boolean {
  const origin = originatingAddress(peer.endpoint);
  return origin !== null && originatingIp !== null && origin !== originatingIp;
}

/**
 * `1.2.3.4:5678` → `1.2.3.4`; `[fd00::1]:51820` → `fd00::1`; `[::ffff:1.2.3.4]:5678` → `1.2.3.4`
 * (as the session is stored, clientAddressOrSame, so a client that did not move is not taken
 * for one that did); null when unknown.
 */
export function originatingAddress(endpoint: string | null): string | null {
  if (endpoint === null) return null;
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(endpoint);
  if (bracketed !== null) return bracketed[1] === undefined ? null : clientAddressOrSame(bracketed[1]);
  const colon = endpoint.lastIndexOf(':');
  return clientAddressOrSame(colon > 0 ? endpoint.slice(0, colon) : endpoint);
}

/**
 * The run's first handshake, as our agent watched it, but not before `earliest`; else the latest
 * handshake the pass saw (eduVPN's vpn-daemon says nothing of runs).
 */
function sessionStart(peer: DaemonPeer, earliest: number | undefined, now: Date): Date {
  const latest = peer.lastHandshakeTime ?? now;
  if (peer.onlineSince === null || peer.onlineSince >= latest) return latest;
  const start = Math.max(peer.onlineSince.getTime(), earliest ?? Number.NEGATIVE_INFINITY);
  return new Date(Math.min(start, now.getTime()));
}

/**
 * When the peer's current run began, if after the open session's own run: a new run begins
 * only after 3 minutes of silence, so one the agent dates more than that after the session's
 * start is another (a few seconds of clock shift between two passes never look like it).
 */
function newRunSince(session: OpenSession, peer: DaemonPeer, now: Date): Date | null {
  if (peer.onlineSince === null) return null;
  if (peer.onlineSince.getTime() <= Date.parse(session.connectedAt) + ONLINE_THRESHOLD_MS) return null;
  return peer.onlineSince < now ? peer.onlineSince : now;
}

/** The peers whose run began before their latest handshake: those earliestStarts bounds. */
function keysOfLaterRuns(peers: readonly DaemonPeer[]): string[] {
  return peers
    .filter(
      (peer) =>
        peer.onlineSince !== null && peer.lastHandshakeTime !== null && peer.onlineSince < peer.lastHandshakeTime,
    )
    .map((peer) => peer.publicKey as string);
}

/**
 * For peers whose run began before their latest handshake: the earliest moment their new
 * session may start (epoch ms), the later of the configuration's creation and the end of the
 * connection's last session (`ends`, by key: at least those of keysOfLaterRuns). A run the agent
 * kept across a removal and a quick re-add (one interface write), or across the 3-minute
 * boundary the portal judged a moment earlier, would otherwise date the session before its
 * configuration existed, or inside the session before it.
 */
function earliestStarts(
  peers: readonly DaemonPeer[],
  configurations: ReadonlyMap<string, WireGuardPeer>,
  ends: ReadonlyMap<string, string>,
): Map<string, number> {
  const earliest = new Map<string, number>();
  for (const key of keysOfLaterRuns(peers)) {
    const created = configurations.get(key)?.createdAt;
    if (created !== undefined) earliest.set(key, Date.parse(created));
    const ended = ends.get(key);
    if (ended !== undefined)
      earliest.set(key, Math.max(earliest.get(key) ?? Number.NEGATIVE_INFINITY, Date.parse(ended)));
  }
  return earliest;
}

/** The end of each connection's last session in the history (ATOM), by key; none for one without. */
async function lastSessionEndsOf(ctx: PortalContext, keys: readonly string[]): Promise<Map<string, string>> {
  const ends = new Map<string, string>();
  for (let start = 0; start < keys.length; start += CHUNK)
    for (const [key, ended] of await lastSessionEnds(ctx.db, keys.slice(start, start + CHUNK))) ends.set(key, ended);
  return ends;
}

async function configurationsOf(ctx: PortalContext, keys: readonly string[]): Promise<Map<string, WireGuardPeer>> {
  const found = new Map<string, WireGuardPeer>();
  for (let start = 0; start < keys.length; start += CHUNK) {
    for (const peer of await peersWithKeys(ctx.db, keys.slice(start, start + CHUNK))) found.set(peer.publicKey, peer);
  }
  return found;
}
