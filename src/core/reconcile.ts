// Makes every node follow the database: its WireGuard peer set equals the enabled, unexpired
// configurations of the profiles on that node, and every OpenVPN client connected without
// such a configuration is disconnected. Runs at start, every `reconcileInterval`, and when a
// node answers again after an outage. Expired configurations are deleted here first.
import type { NodeDaemon, DaemonPeer } from '../node/daemon-client.js';
import { activeCertificates, deleteCertificate, expiredCertificates } from '../storage/certificates.js';
import { activePeers, deletePeer, expiredPeers, type WireGuardPeer } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import type { NodeNumber } from './ids.js';
import { forEachLimited } from './limited-parallel.js';
import { peerIpNet } from './node-peers.js';
import { formatAtom } from './time.js';
import { releaseAddresses } from './wireguard-addresses.js';

const PARALLEL_CHANGES_PER_NODE = 16;
const EXPIRED_BATCH = 500;

export interface NodeReconcileResult {
  readonly nodeNumber: NodeNumber;
  readonly reachable: boolean;
  readonly added: number;
  readonly removed: number;
  /** OpenVPN clients disconnected because their configuration is gone, disabled or expired. */
  readonly disconnected: number;
}

export async function reconcileAll(ctx: PortalContext): Promise<NodeReconcileResult[]> {
  await deleteExpiredConfigurations(ctx);
  return Promise.all(ctx.nodes.all().map((daemon) => reconcileNode(ctx, daemon)));
}

export async function reconcileNode(ctx: PortalContext, daemon: NodeDaemon): Promise<NodeReconcileResult> {
  const nodeNumber = daemon.nodeNumber;
  const actual = await ctx.nodes.attempt(daemon, 'peer_list', (node) => node.peerList(true));
  if (actual === undefined) return { nodeNumber, reachable: false, added: 0, removed: 0, disconnected: 0 };

  const desired = (await activePeers(ctx.db, { now: formatAtom(ctx.clock.now()), nodeNumber })).filter((peer) =>
    isServedOn(ctx, peer.profileId, nodeNumber, 'wireGuard'),
  );
  const desiredByKey = new Map(desired.map((peer) => [peer.publicKey as string, peer]));
  const actualByKey = new Map(actual.map((peer) => [peer.publicKey as string, peer]));

  const toRemove = actual.filter((peer) => !desiredByKey.has(peer.publicKey));
  const toAdd = desired.filter((peer) => !sameAllowedIps(actualByKey.get(peer.publicKey), peer));

  let removed = 0;
  let added = 0;
  await forEachLimited(toRemove, PARALLEL_CHANGES_PER_NODE, async (peer) => {
    // attempt() answers undefined for a failure, and so would a bare Promise<void>: count on `true`.
    if ((await ctx.nodes.attempt(daemon, 'remove_peer', (node) => node.removePeer(peer.publicKey).then(() => true))) === true) removed++;
  });
  await forEachLimited(toAdd, PARALLEL_CHANGES_PER_NODE, async (peer) => {
    if ((await ctx.nodes.attempt(daemon, 'add_peer', (node) => node.addPeer(peer.publicKey, peerIpNet(peer)).then(() => true))) === true) added++;
  });
  if (added > 0 || removed > 0) {
    ctx.logger.info({ nodeNumber, added, removed }, `reconcile: node ${nodeNumber} had ${removed} peer(s) too many and missed ${added}`);
  }
  const disconnected = runsOpenVpn(ctx, nodeNumber) ? await reconcileOpenVpnClients(ctx, daemon) : 0;
  return { nodeNumber, reachable: true, added, removed, disconnected };
}

/** Disconnects the node's OpenVPN clients that have no valid configuration; returns how many. */
async function reconcileOpenVpnClients(ctx: PortalContext, daemon: NodeDaemon): Promise<number> {
  const nodeNumber = daemon.nodeNumber;
  const clients = await ctx.nodes.attempt(daemon, 'connection_list', (node) => node.openVpnConnectionList());
  if (clients === undefined || clients.length === 0) return 0;
  const names = [...new Set(clients.map((client) => client.commonName))];
  const valid = new Set<string>();
  for (let start = 0; start < names.length; start += EXPIRED_BATCH) {
    const chunk = names.slice(start, start + EXPIRED_BATCH);
    for (const certificate of await activeCertificates(ctx.db, { now: formatAtom(ctx.clock.now()), nodeNumber, commonNames: chunk })) {
      if (isServedOn(ctx, certificate.profileId, nodeNumber, 'openVpn')) valid.add(certificate.commonName);
    }
  }
  let disconnected = 0;
  await forEachLimited(
    names.filter((name) => !valid.has(name)),
    PARALLEL_CHANGES_PER_NODE,
    async (commonName) => {
      if ((await ctx.nodes.attempt(daemon, 'disconnect_client', (node) => node.disconnectClient(commonName).then(() => true))) === true) disconnected++;
    },
  );
  if (disconnected > 0) ctx.logger.info({ nodeNumber, disconnected }, `reconcile: disconnected ${disconnected} OpenVPN client(s) without a valid configuration from node ${nodeNumber}`);
  return disconnected;
}

/**
 * Deletes expired configurations, freeing the addresses of WireGuard ones; the node pass then
 * removes their peers and disconnects their OpenVPN clients.
 */
export async function deleteExpiredConfigurations(ctx: PortalContext): Promise<number> {
  const now = formatAtom(ctx.clock.now());
  let deleted = 0;
  for (;;) {
    const batch = await expiredPeers(ctx.db, now, EXPIRED_BATCH);
    if (batch.length === 0) break;
    await ctx.db.transaction().execute(async (trx) => {
      for (const peer of batch) {
        // Give the address back only when this pass deleted the configuration (not a
        // delete_connection on another portal instance a moment before).
        if (await deletePeer(trx, peer.publicKey)) await releaseAddresses(trx, ctx.config, peer);
      }
    });
    deleted += batch.length;
  }
  for (;;) {
    const batch = await expiredCertificates(ctx.db, now, EXPIRED_BATCH);
    if (batch.length === 0) break;
    await ctx.db.transaction().execute(async (trx) => {
      for (const certificate of batch) await deleteCertificate(trx, certificate.commonName);
    });
    deleted += batch.length;
  }
  if (deleted > 0) ctx.logger.info({ deleted }, `deleted ${deleted} expired configuration(s)`);
  return deleted;
}

/** A configuration belongs on a node only while its profile still exists and still runs the protocol there. */
function isServedOn(ctx: PortalContext, profileId: string, nodeNumber: NodeNumber, protocol: 'wireGuard' | 'openVpn'): boolean {
  const profile = ctx.config.profiles.find((candidate) => candidate.profileId === profileId);
  return profile?.nodes.some((node) => node.nodeNumber === nodeNumber && node[protocol] !== null) ?? false;
}

function runsOpenVpn(ctx: PortalContext, nodeNumber: NodeNumber): boolean {
  return ctx.config.profiles.some((profile) => profile.nodes.some((node) => node.nodeNumber === nodeNumber && node.openVpn !== null));
}

function sameAllowedIps(actual: DaemonPeer | undefined, peer: WireGuardPeer): boolean {
  if (actual === undefined) return false;
  const wanted = peerIpNet(peer);
  return actual.ipNet.length === wanted.length && wanted.every((net) => actual.ipNet.includes(net));
}
