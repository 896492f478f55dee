// Makes every node follow the database: its WireGuard peer set equals the enabled, unexpired
// configurations of the profiles on that node, and every OpenVPN client connected without
// such a configuration is disconnected. Runs at start, every `reconcileInterval`, and for one
// node as soon as it answers again or lost its peers. Expired configurations are deleted by
// the expiry sweep (deleteExpiredConfigurations), which the scheduler runs at each expiry.
//
// Races with revocations are settled by revisions (src/storage/revisions.ts): every add this
// pass sends carries the revision it read, so a disable, delete or destroy that commits while
// the pass runs always wins on the node, whichever arrives there first.
import {
  MAX_CONNECTIONS_PER_NODE,
  type DaemonPeer,
  type NodeDaemon,
  type RemovedPeer,
} from '../../node-client/daemon-client.js';
import {
  activeCertificates,
  deleteCertificate,
  expiredCertificates,
  findCertificate,
  hasCertificateOnNode,
} from '../../storage/certificates.js';
import { hasOpenOpenVpnSession } from '../../storage/connection-log.js';
import { hasAllocatedOnNode } from '../../storage/ip-pools.js';
import { isNodeResetConfirmed } from '../../storage/node-resets.js';
import { latestRevision, nextRevision, toRevision } from '../../storage/revisions.js';
import {
  activePeers,
  countPeersOnNode,
  deletePeer,
  expiredPeers,
  peersWantedOnNode,
  keysWantedOnNode,
  peersWithKeys,
  catchUpWithNodeRevision,
  type PeerWantedOnNode,
  type WireGuardPeer,
} from '../../storage/wg-peers.js';
import { findProfile } from '../../config/portal-config.js';
import type { PortalContext } from '../context.js';
import { openVpnConfiguration, wireGuardConfiguration } from '../events.js';
import {
  asRevocationId,
  asWireGuardKey,
  type NodeNumber,
  type RevocationId,
  type WireGuardKey,
} from '../../shared/ids.js';
import { forEachLimited } from '../../shared/limited-parallel.js';
import {
  endNatOfRemovedNodes,
  peerIpNet,
  readTimeNow,
  removalsOf,
  type PeerRemoval,
  type ReadTime,
  releaseAddresses,
  youngEnoughToSend,
} from '../nodes/index.js';
import { pendingRevocationsOnNode } from '../../storage/revocation-nodes.js';
import { confirmRemovals, revocationIdPerUser, revokeOnNodes } from '../revocations/index.js';
import { formatAtom } from '../../shared/time.js';
import {
  endSessionsOfRemovedNodes,
  endSessionsOfRemovedPeers,
  endUnlistedOpenVpnSessions,
  observeWireGuardSessions,
  recordLiveStats,
} from '../sessions/index.js';
import { isCanonicalWireGuardKey } from '../../wireguard/keys.js';

/**
 * Nodes reconciled at once at most, by a full pass and the passes for single nodes together.
 * Each holds its node's peer list and the database's peers of that node in memory (some 20 MB at
 * 20,000 peers), and the portal's heap is capped (192 MB): fifty nodes of 20,000 peers at once
 * ran it out of memory. Fewer run at once when their listings are large (src/node-client/listing-budget.ts).
 */
export const PARALLEL_NODE_PASSES = 4;
/** A listed peer, as the estimate from the database counts it: our agent's typical entry is some 230 bytes. */
const LISTED_PEER_BYTES = 256;

/**
 * What the node's listings are expected to take, its weight among the node passes: the most of
 * its last listings' size, the peers it said it holds (`/i/node`) and the configurations the
 * database holds for it.
 */
export async function expectedListingBytes(ctx: PortalContext, daemon: NodeDaemon): Promise<number> {
  const stored = await countPeersOnNode(ctx.db, daemon.nodeNumber);
  const reported = ctx.nodes.reportedPeerCount(daemon.nodeNumber) ?? 0;
  return Math.max(daemon.lastListingBytes ?? 0, Math.max(stored, reported) * LISTED_PEER_BYTES);
}
/** A pass keeps as many instructions in flight to a node as the connections allow. */
export const PARALLEL_CHANGES_PER_NODE = MAX_CONNECTIONS_PER_NODE;
/** Keys per database read: below every dialect's parameter limit, and short enough that an add is never sent long after its state was read. */
const CHUNK = 500;
/**
 * Peers per add_peers request to our agent: half of what is kept in flight, so the agent
 * receives one request while it writes the other's peers (its batches hold as many).
 */
export const PEERS_PER_ADD_REQUEST = PARALLEL_CHANGES_PER_NODE / 2;

export interface NodeReconcileResult {
  readonly nodeNumber: NodeNumber;
  readonly reachable: boolean;
  readonly added: number;
  readonly removed: number;
  /** OpenVPN clients disconnected because their configuration is gone, disabled or expired. */
  readonly disconnected: number;
}

/**
 * Runs one node's part of a full pass when its turn comes, or answers undefined when the node is
 * left out (another portal instance is reconciling it right now). The scheduler's turns share
 * their places with the passes for single nodes (src/core/reconcile/node-slots.ts).
 */
export type NodeTurn = (
  daemon: NodeDaemon,
  work: () => Promise<NodeReconcileResult>,
) => Promise<NodeReconcileResult | undefined>;

/**
 * The full pass, run by one portal instance at a time: expired configurations, then every node,
 * whose WireGuard sessions are observed on the way, then the end of the sessions and NAT
 * mappings of nodes no longer configured, then the live statistics. Answers the nodes it reconciled. `checkpoint`
 * runs before each node's turn and before the statistics: it throws to end the pass there (its
 * lock was lost, the portal stops); the nodes under way finish first.
 */
export async function reconcileAll(
  ctx: PortalContext,
  turn: NodeTurn = (_daemon, work) => work(),
  checkpoint: () => void = () => {},
): Promise<NodeReconcileResult[]> {
  await deleteExpiredConfigurations(ctx);
  const nodes = ctx.nodes.all();
  const results: (NodeReconcileResult | undefined)[] = [];
  await forEachLimited(
    nodes.map((daemon, position) => ({ daemon, position })),
    PARALLEL_NODE_PASSES,
    async ({ daemon, position }) => {
      checkpoint();
      results[position] = await turn(daemon, () => {
        // Checked again once the node's place came: the wait for it may have been long.
        checkpoint();
        return reconcileNode(ctx, daemon, { observeSessions: true });
      });
    },
  );
  checkpoint();
  await endSessionsOfRemovedNodes(ctx);
  // Their NAT mappings too, from the same pass: their addresses may be another node's now.
  await endNatOfRemovedNodes(ctx);
  await recordLiveStats(ctx);
  return results.filter((result): result is NodeReconcileResult => result !== undefined);
}

export interface NodePassOptions {
  /** Derive WireGuard sessions from the peer list (full passes only: one instance at a time does it). */
  readonly observeSessions?: boolean;
}

/**
 * One node's pass. A node that stops answering under it (held for down after one timeout) is
 * sent nothing more by this pass: each change would wait out its own timeout while the pass
 * holds the node's place and weight, which other nodes' passes and the listings wait for. Its
 * recovery pass, when it answers again, does the rest; nothing unconfirmed is confirmed.
 */
export async function reconcileNode(
  ctx: PortalContext,
  daemon: NodeDaemon,
  options: NodePassOptions = {},
): Promise<NodeReconcileResult> {
  const started = performance.now();
  const result = await reconcileNodeOnce(ctx, daemon, options);
  ctx.events.publish({
    type: 'reconcile.finished',
    at: ctx.clock.now(),
    ...result,
    durationMs: performance.now() - started,
  });
  return result;
}

async function reconcileNodeOnce(
  ctx: PortalContext,
  daemon: NodeDaemon,
  options: NodePassOptions,
): Promise<NodeReconcileResult> {
  const nodeNumber = daemon.nodeNumber;
  // The node first, then the database: a peer is stored before it is pushed, so every peer the
  // node holds is in the database read below, unless it was deleted or disabled since.
  const info = await ctx.nodes.attempt(daemon, 'node_info', (node) => node.nodeInfo());
  if (info === undefined) return { nodeNumber, reachable: false, added: 0, removed: 0, disconnected: 0 };
  await ctx.nodes.noticeNat(nodeNumber, info.nat);
  if (info.maxRevision !== null) await catchUpWithNode(ctx, nodeNumber, info.maxRevision);
  const actual = await ctx.nodes.attempt(daemon, 'peer_list', (node) => node.peerList(true));
  if (actual === undefined) {
    // A node that answers but whose list could not be read (an error answer, a list longer than
    // the portal reads) still gets the removals its receipts wait for: a removal needs no list.
    if (!ctx.nodes.isDown(nodeNumber))
      await confirmPendingRevocations(ctx, daemon, {
        removedKeys: new Set(),
        pendingBeforeRemovals: new Set(),
        readsOpenVpn: await readsOpenVpnClients(ctx, nodeNumber),
      });
    return { nodeNumber, reachable: false, added: 0, removed: 0, disconnected: 0 };
  }
  if (options.observeSessions === true) await observeWireGuardSessions(ctx, nodeNumber, actual);

  // A configuration stored before keys had to be canonical may hold a non-canonical twin of
  // another key: it is never wanted on a node, and one the node holds is removed.
  const desired = (await peersWantedOnNode(ctx.db, { now: formatAtom(ctx.clock.now()), nodeNumber })).filter(
    (peer) => isServedOn(ctx, peer.profileId, nodeNumber, 'wireGuard') && isCanonicalWireGuardKey(peer.publicKey),
  );
  const desiredKeys = new Set<string>(desired.map((peer) => peer.publicKey));
  const actualByKey = new Map(actual.map((peer) => [peer.publicKey as string, peer]));
  const extra = actual.filter((peer) => !peer.canonicalKey || !desiredKeys.has(peer.publicKey));
  const missing = desired.filter((peer) => !sameAllowedIps(actualByKey.get(peer.publicKey), peer));

  let removed = 0;
  /** Keys this pass had the node remove (answered): final, by their revision. */
  const removedKeys = new Set<string>();
  /** The receipts' WireGuard configurations pending on the node before the removals' revisions were read (pendingKey). */
  let pendingBeforeRemovals: ReadonlySet<string> = new Set();
  let mayRemove = true;
  if (extra.length > 0 && desired.length === 0 && !(await mayEmpty(ctx, nodeNumber, actual.length))) {
    // Leave the node alone; mayEmpty said why, loudly.
    mayRemove = false;
  } else {
    if (extra.length > 0) pendingBeforeRemovals = await pendingWireGuardRevocations(ctx, nodeNumber);
    const removals = await removalsFor(
      ctx,
      nodeNumber,
      extra.map((peer) => peer.publicKey),
    );
    const gone: { publicKey: string; nodeNumber: NodeNumber; answer: RemovedPeer | null }[] = [];
    await forEachLimited(removals, PARALLEL_CHANGES_PER_NODE, async (removal) => {
      if (ctx.nodes.isDown(nodeNumber)) return;
      const done = await ctx.nodes.attempt(daemon, 'remove_peer', async (node) => ({
        answer: await node.removePeer(removal.publicKey, removal.revision),
      }));
      if (done === undefined) return;
      removed++;
      removedKeys.add(removal.publicKey);
      gone.push({ publicKey: removal.publicKey, nodeNumber, answer: done.answer });
    });
    await endSessionsOfRemovedPeers(ctx, gone);
  }

  const added = await addMissing(ctx, daemon, missing, info.addPeersMax);
  if (added > 0 || removed > 0) {
    ctx.logger.info(
      { nodeNumber, added, removed },
      `reconcile: node ${nodeNumber} had ${removed} peer(s) too many and missed ${added}`,
    );
  }
  const readsOpenVpn = await readsOpenVpnClients(ctx, nodeNumber);
  const disconnected = readsOpenVpn ? await reconcileOpenVpnClients(ctx, daemon) : 0;
  if (mayRemove) await confirmPendingRevocations(ctx, daemon, { removedKeys, pendingBeforeRemovals, readsOpenVpn });
  return { nodeNumber, reachable: true, added, removed, disconnected };
}

/**
 * Pushes the missing peers, as many in flight as the node's connections allow from the first to
 * the last. Each chunk is read again just before it is sent, so a long pass never sends an old
 * state; the next chunk is read while the last adds of the one before are still under way, so
 * the node is not left waiting on the slowest add of every chunk (65,533 peers are 132 chunks).
 */
async function addMissing(
  ctx: PortalContext,
  daemon: NodeDaemon,
  missing: readonly PeerWantedOnNode[],
  addPeersMax: number | null,
): Promise<number> {
  const nodeNumber = daemon.nodeNumber;
  // Our agent takes many adds per request (add_peers): the same peers in flight, in a few
  // requests of up to PEERS_PER_ADD_REQUEST each; eduVPN's daemon gets one add_peer per peer.
  const perRequest = addPeersMax === null ? 1 : Math.min(addPeersMax, PEERS_PER_ADD_REQUEST);
  /** Sends the peers still young enough (src/core/nodes/read-age.ts); answers how many went, undefined on a failure. */
  const send = (peers: readonly ReadPeer[]): Promise<number | undefined> =>
    ctx.nodes.attempt(daemon, addPeersMax === null ? 'add_peer' : 'add_peers', async (node) => {
      let sent = 0;
      if (addPeersMax === null) {
        for (const { peer, readAt } of peers) {
          if (!youngEnoughToSend(ctx, readAt)) continue;
          await node.addPeer(peer.publicKey, peerIpNet(peer), peer.revision);
          sent++;
        }
        return sent;
      }
      const young = peers.filter(({ readAt }) => youngEnoughToSend(ctx, readAt)).map(({ peer }) => peer);
      if (young.length > 0)
        await node.addPeers(
          young.map((peer) => ({ publicKey: peer.publicKey, ipNet: peerIpNet(peer), revision: peer.revision })),
        );
      return young.length;
    });
  let added = 0;
  let tooOld = 0;
  const ready: ReadPeer[] = [];
  let nextChunk = 0;
  let reading: Promise<void> | null = null;
  let failure: { readonly error: unknown } | null = null;
  const readNextChunk = (): Promise<void> => {
    reading ??= (async () => {
      const keys = missing.slice(nextChunk, nextChunk + CHUNK).map((peer) => peer.publicKey);
      nextChunk += CHUNK;
      const readAt = readTimeNow(ctx);
      const peers = await activePeers(ctx.db, { now: formatAtom(ctx.clock.now()), nodeNumber, publicKeys: keys });
      ready.push(...peers.map((peer) => ({ peer, readAt })));
    })()
      .catch((error: unknown) => {
        failure ??= { error };
      })
      .finally(() => {
        reading = null;
      });
    return reading;
  };
  const sender = async (): Promise<void> => {
    for (;;) {
      if (failure !== null) throw failure.error;
      const peers = ready.splice(0, perRequest);
      if (peers.length === 0) {
        if (nextChunk >= missing.length && reading === null) return;
        await readNextChunk();
        continue;
      }
      if (ctx.nodes.isDown(nodeNumber)) return;
      if (ready.length < PARALLEL_CHANGES_PER_NODE && nextChunk < missing.length) void readNextChunk();
      const sent = await send(peers);
      if (sent === undefined) continue;
      added += sent;
      tooOld += peers.length - sent;
    }
  };
  const senders = Math.ceil(PARALLEL_CHANGES_PER_NODE / perRequest);
  await Promise.all(Array.from({ length: Math.min(senders, missing.length) }, sender));
  if (tooOld > 0)
    ctx.logger.warn(
      { nodeNumber, peers: tooOld },
      `reconcile: ${tooOld} peer(s) for node ${nodeNumber} not sent, read too long ago (the portal stood still?); the next pass sends what is still wanted`,
    );
  return added;
}

/** A peer to add, with when the pass read it. */
interface ReadPeer {
  readonly peer: WireGuardPeer;
  readonly readAt: ReadTime;
}

/**
 * Confirms on the open revocation receipts what this pass found gone from the node. A WireGuard
 * configuration counts once the node answered a remove_peer for it at a revision at least as new
 * as its receipt's, which makes the removal final (a late add from before the revocation is then
 * ignored): the keys this pass removed, for the receipts committed before it read their
 * revisions, and the others, which it asks the node to remove now. A removal read before a
 * receipt says nothing of it: the node ignores one older than an instruction it has (an enable
 * in between put the peer back), and answers it all the same. Keys the pass wanted when it began
 * are asked for too: a revocation committed after that read may have overtaken the pass's own
 * add, and removalsFor, reading now, leaves alone only the keys still wanted. An OpenVPN
 * configuration counts once the node answered a disconnect_client of it sent after the receipt
 * committed (disconnectPendingOpenVpnClients).
 */
async function confirmPendingRevocations(
  ctx: PortalContext,
  daemon: NodeDaemon,
  pass: {
    readonly removedKeys: ReadonlySet<string>;
    readonly pendingBeforeRemovals: ReadonlySet<string>;
    /** Whether the pass reads this node's OpenVPN clients (readsOpenVpnClients). */
    readonly readsOpenVpn: boolean;
  },
): Promise<void> {
  const nodeNumber = daemon.nodeNumber;
  const pending = await pendingRevocationsOnNode(ctx.db, nodeNumber);
  if (pending.length === 0) return;
  const removedForIt = (row: PendingRow) =>
    pass.removedKeys.has(row.connectionId) && pass.pendingBeforeRemovals.has(pendingKey(row));
  const unconfirmed = new Set(
    pending
      .filter((row) => row.vpnProto === 'wireguard' && !removedForIt(row))
      .map((row) => asWireGuardKey(row.connectionId)),
  );
  // Their revisions are read after the receipts: each removal is at least as new as its receipt.
  const removedNow = new Set<string>();
  const gone: { publicKey: string; nodeNumber: NodeNumber; answer: RemovedPeer | null }[] = [];
  await forEachLimited(
    await removalsFor(ctx, nodeNumber, [...unconfirmed]),
    PARALLEL_CHANGES_PER_NODE,
    async (removal) => {
      if (ctx.nodes.isDown(nodeNumber)) return;
      const done = await ctx.nodes.attempt(daemon, 'remove_peer', async (node) => ({
        answer: await node.removePeer(removal.publicKey, removal.revision),
      }));
      if (done === undefined) return;
      removedNow.add(removal.publicKey);
      gone.push({ publicKey: removal.publicKey, nodeNumber, answer: done.answer });
    },
  );
  // Their sessions end now, with the counters the node answered, as the pass's own removals'
  // do: when the list could not be read, no pass would see them gone until one reads it.
  await endSessionsOfRemovedPeers(ctx, gone);
  const disconnectedNow = pass.readsOpenVpn
    ? await disconnectPendingOpenVpnClients(ctx, daemon, pending)
    : new Set<string>();
  const confirmed = pending.filter((row) =>
    row.vpnProto === 'wireguard'
      ? removedNow.has(row.connectionId) ||
        // Confirmed for every receipt waiting for it below: only when none waits for a newer removal.
        (removedForIt(row) && !unconfirmed.has(asWireGuardKey(row.connectionId)))
      : disconnectedNow.has(row.connectionId),
  );
  // What is gone from the node now is gone for every receipt still waiting for it there.
  await confirmRemovals(ctx, [
    {
      revocationIds: [...new Set(pending.map((row) => asRevocationId(row.revocationId)))],
      confirmed: confirmed.map((row) => ({ nodeNumber, connectionId: row.connectionId })),
    },
  ]);
}

/** A configuration pending on a node under one receipt. */
type PendingRow = Awaited<ReturnType<typeof pendingRevocationsOnNode>>[number];

function pendingKey(row: { readonly revocationId: string; readonly connectionId: string }): string {
  return `${row.revocationId}\n${row.connectionId}`;
}

/** The receipts' WireGuard configurations pending on the node now (pendingKey). */
async function pendingWireGuardRevocations(ctx: PortalContext, nodeNumber: NodeNumber): Promise<Set<string>> {
  return new Set(
    (await pendingRevocationsOnNode(ctx.db, nodeNumber)).filter((row) => row.vpnProto === 'wireguard').map(pendingKey),
  );
}

/**
 * The removals for keys the node holds but should not, each with a revision at least as new
 * as the change that made it unwanted: the row's own revision (disabled, expired, or no longer
 * served there), or, for a key the database no longer knows, the newest revision there is. A
 * key wanted again by now (an enable_user or a resume since the pass read what it wants) is
 * left alone: its row's revision is the enable's, and a removal at it would undo the enable.
 */
async function removalsFor(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  keys: readonly WireGuardKey[],
): Promise<PeerRemoval[]> {
  if (keys.length === 0) return [];
  const known = new Map<string, WireGuardPeer>();
  const wantedAgain = new Set<WireGuardKey>();
  for (let start = 0; start < keys.length; start += CHUNK) {
    const chunk = keys.slice(start, start + CHUNK);
    const rows = await peersWithKeys(ctx.db, chunk);
    for (const peer of rows) known.set(peer.publicKey, peer);
    // Read after the rows and their revisions: an enable committed before this read is seen
    // here; one after it is newer than the revision read, and the node keeps its add. Wanted as
    // the pass wants a peer: served on this node, by a canonical key (a twin is never wanted).
    const wanted = await keysWantedOnNode(ctx.db, { now: formatAtom(ctx.clock.now()), nodeNumber, keys: chunk });
    for (const peer of rows)
      if (
        wanted.has(peer.publicKey) &&
        isServedOn(ctx, peer.profileId, nodeNumber, 'wireGuard') &&
        isCanonicalWireGuardKey(peer.publicKey)
      )
        wantedAgain.add(peer.publicKey);
  }
  // Read after the rows: at least the revision of any deletion that made a key unknown.
  const latest = await latestRevision(ctx.db);
  return keys
    .filter((publicKey) => !wantedAgain.has(publicKey))
    .map((publicKey) => ({ publicKey, nodeNumber, revision: known.get(publicKey)?.revision ?? latest }));
}

/**
 * The highest `max_revision` of a node the counter follows. An agent takes revisions of at most
 * 15 digits (src/protocol/vpn-daemon.ts): a counter moved to a broken or hostile node's claim of
 * 999,999,999,999,999 would hand out numbers every agent refuses, and no revocation would reach
 * any node again (a rollback never moves the counter back). 10^14 leaves 900 trillion numbers
 * above it, more than any database hands out, and is far above what a real one reaches.
 */
export const MAX_BELIEVED_NODE_REVISION = 10 ** 14;

/**
 * A node that applied a revision newer than any this database handed out followed another
 * database (a restored backup, a database switched in `database`): its memory would make it
 * ignore this one's instructions as old. Move the counter past the node's and give this node's
 * configurations new revisions, so the database's state is the newest the node has heard. A
 * claim above MAX_BELIEVED_NODE_REVISION is not followed, and said loudly.
 */
async function catchUpWithNode(ctx: PortalContext, nodeNumber: NodeNumber, nodeRevision: number): Promise<void> {
  if (nodeRevision > MAX_BELIEVED_NODE_REVISION) {
    ctx.logger.error(
      { nodeNumber, nodeRevision, limit: MAX_BELIEVED_NODE_REVISION },
      `node ${nodeNumber} claims to have applied revision ${nodeRevision}, above ${MAX_BELIEVED_NODE_REVISION}, which no database reaches: ` +
        `ignored (the node is broken or not what it claims); following it would make every node refuse later revocations`,
    );
    return;
  }
  if (nodeRevision <= (await latestRevision(ctx.db))) return;
  const stamped = await ctx.db
    .transaction()
    .execute((trx) => catchUpWithNodeRevision(trx, nodeNumber, toRevision(nodeRevision)));
  ctx.logger.warn(
    { nodeNumber, nodeRevision, stamped },
    `node ${nodeNumber} has applied revision ${nodeRevision}, newer than this database's: it followed another database (a restored backup?); this database's state now takes precedence`,
  );
}

/**
 * Whether the pass may remove every peer of a node that holds some. Not when this database
 * has never handed out an address on that node and no administrator confirmed it: that is a
 * fresh or wrong database (a typo in `database`, a `db copy` from the wrong file), and
 * emptying the node would cut every tunnel.
 */
async function mayEmpty(ctx: PortalContext, nodeNumber: NodeNumber, peersOnNode: number): Promise<boolean> {
  if (await hasAllocatedOnNode(ctx.db, nodeNumber)) return true;
  if (await isNodeResetConfirmed(ctx.db, nodeNumber)) return true;
  ctx.logger.error(
    { nodeNumber, peersOnNode },
    `node ${nodeNumber} holds ${peersOnNode} peer(s) but this database has never held a WireGuard configuration for it: ` +
      `not removing them. Check the "database" option; if the node really must be emptied, run "vpn-portal node-reset ${nodeNumber}"`,
  );
  return false;
}

/** Disconnects the node's OpenVPN clients that have no valid configuration; answers how many. */
async function reconcileOpenVpnClients(ctx: PortalContext, daemon: NodeDaemon): Promise<number> {
  const nodeNumber = daemon.nodeNumber;
  const listedAtTime = ctx.clock.now();
  const clients = await ctx.nodes.attempt(daemon, 'connection_list', (node) => node.openVpnConnectionList());
  if (clients === undefined) return 0;
  await endUnlistedOpenVpnSessions(ctx, nodeNumber, clients, listedAtTime);
  if (clients.length === 0) return 0;
  const names = [...new Set(clients.map((client) => client.commonName))];
  const valid = new Set<string>();
  for (let start = 0; start < names.length; start += CHUNK) {
    const chunk = names.slice(start, start + CHUNK);
    for (const certificate of await activeCertificates(ctx.db, {
      now: formatAtom(ctx.clock.now()),
      nodeNumber,
      commonNames: chunk,
    })) {
      if (isServedOn(ctx, certificate.profileId, nodeNumber, 'openVpn')) valid.add(certificate.commonName);
    }
  }
  let disconnected = 0;
  await forEachLimited(
    names.filter((name) => !valid.has(name)),
    PARALLEL_CHANGES_PER_NODE,
    async (commonName) => {
      if (
        (await ctx.nodes.attempt(daemon, 'disconnect_client', (node) =>
          node.disconnectClient(commonName).then(() => true),
        )) === true
      ) {
        disconnected++;
      }
    },
  );
  if (disconnected > 0)
    ctx.logger.info(
      { nodeNumber, disconnected },
      `reconcile: disconnected ${disconnected} OpenVPN client(s) without a valid configuration from node ${nodeNumber}`,
    );
  return disconnected;
}

/**
 * Disconnects the clients of the receipts' OpenVPN configurations pending on the node, each read
 * before its disconnect is sent; answers the common names the node answered for. Such an answer
 * is what confirms them, not a client missing from the node's list: a client being admitted is
 * in no list yet (its address not given, its connection not established), and one admitted a
 * moment before the receipt committed would connect after the list was read. The node's
 * disconnect ends the connections of that name, those being admitted too.
 */
async function disconnectPendingOpenVpnClients(
  ctx: PortalContext,
  daemon: NodeDaemon,
  pending: readonly PendingRow[],
): Promise<Set<string>> {
  const nodeNumber = daemon.nodeNumber;
  const disconnected = new Set<string>();
  const names = [...new Set(pending.filter((row) => row.vpnProto === 'openvpn').map((row) => row.connectionId))];
  await forEachLimited(names, PARALLEL_CHANGES_PER_NODE, async (commonName) => {
    if (ctx.nodes.isDown(nodeNumber)) return;
    const done = await ctx.nodes.attempt(daemon, 'disconnect_client', (node) =>
      node.disconnectClient(commonName).then(() => true),
    );
    if (done === true) disconnected.add(commonName);
  });
  return disconnected;
}

/**
 * Deletes expired configurations, freeing the addresses of WireGuard ones, and takes them off
 * their nodes at once: WireGuard peers are removed, OpenVPN clients disconnected.
 */
export async function deleteExpiredConfigurations(ctx: PortalContext): Promise<number> {
  const now = formatAtom(ctx.clock.now());
  let deleted = 0;
  for (;;) {
    const batch = await expiredPeers(ctx.db, now, CHUNK);
    if (batch.length === 0) break;
    const receiptOf = revocationIdPerUser(ctx);
    const receipts = new Set<RevocationId>();
    const removals = await ctx.events.change(ctx.db, async (trx, announce) => {
      // A change may run again (a lost connection, a deadlock): only the receipts of the run that commits.
      receipts.clear();
      const at = ctx.clock.now();
      const kept: typeof batch = [];
      for (const peer of batch) {
        // Give the address back only when this pass deleted the configuration (not a
        // delete_connection on another portal instance a moment before). One an /extend
        // renewed since the batch was read stays, on its node too.
        if (!(await deletePeer(trx, peer.publicKey, now))) {
          if ((await peersWithKeys(trx, [peer.publicKey])).length > 0) kept.push(peer);
          continue;
        }
        await releaseAddresses(trx, ctx.config, [peer]);
        const revocationId = receiptOf(peer.userId);
        receipts.add(revocationId);
        await announce({
          type: 'configuration.expired',
          at,
          configuration: wireGuardConfiguration(peer),
          revocationId,
        });
      }
      return removalsOf(
        batch.filter((peer) => !kept.includes(peer)),
        await nextRevision(trx),
      );
    });
    deleted += batch.length;
    await revokeOnNodes(ctx, [...receipts], removals, [], 'expiry');
  }
  for (;;) {
    const batch = await expiredCertificates(ctx.db, now, CHUNK);
    if (batch.length === 0) break;
    const receiptOf = revocationIdPerUser(ctx);
    const receipts = new Set<RevocationId>();
    const ended = await ctx.events.change(ctx.db, async (trx, announce) => {
      receipts.clear();
      const at = ctx.clock.now();
      const kept: typeof batch = [];
      for (const certificate of batch) {
        if (await deleteCertificate(trx, certificate.commonName, now)) {
          const revocationId = receiptOf(certificate.userId);
          receipts.add(revocationId);
          await announce({
            type: 'configuration.expired',
            at,
            configuration: openVpnConfiguration(certificate),
            revocationId,
          });
        } else if ((await findCertificate(trx, certificate.commonName)) !== undefined) kept.push(certificate);
      }
      // Renewed by /extend since the batch was read: its clients stay.
      return batch.filter((certificate) => !kept.includes(certificate));
    });
    deleted += batch.length;
    await revokeOnNodes(ctx, [...receipts], [], ended, 'expiry');
  }
  if (deleted > 0) ctx.logger.info({ deleted }, `deleted ${deleted} expired configuration(s)`);
  return deleted;
}

/** A configuration belongs on a node only while its profile still exists and still runs the protocol there. */
function isServedOn(
  ctx: PortalContext,
  profileId: string,
  nodeNumber: NodeNumber,
  protocol: 'wireGuard' | 'openVpn',
): boolean {
  const profile = findProfile(ctx.config, profileId);
  return profile?.nodes.some((node) => node.nodeNumber === nodeNumber && node[protocol] !== null) ?? false;
}

/**
 * Whether the pass reads the node's OpenVPN clients: where the configuration runs OpenVPN, and
 * also where it no longer does but the database still holds OpenVPN there (a configuration, an
 * open session, a receipt waiting). The OpenVPN process the configuration dropped may still run
 * with clients connected, which are disconnected; and the node's list is what ends those
 * sessions and confirms those receipts, which would otherwise stay open for ever.
 */
async function readsOpenVpnClients(ctx: PortalContext, nodeNumber: NodeNumber): Promise<boolean> {
  const runsOpenVpn = ctx.config.profiles.some((profile) =>
    profile.nodes.some((node) => node.nodeNumber === nodeNumber && node.openVpn !== null),
  );
  if (runsOpenVpn) return true;
  return (
    (await hasCertificateOnNode(ctx.db, nodeNumber)) ||
    (await hasOpenOpenVpnSession(ctx.db, nodeNumber)) ||
    (await pendingRevocationsOnNode(ctx.db, nodeNumber)).some((row) => row.vpnProto === 'openvpn')
  );
}

function sameAllowedIps(actual: DaemonPeer | undefined, peer: PeerWantedOnNode): boolean {
  if (actual === undefined) return false;
  const wanted = peerIpNet(peer);
  return actual.ipNet.length === wanted.length && wanted.every((net) => actual.ipNet.includes(net));
}
