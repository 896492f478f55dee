// The WireGuard path of POST /create: a new key pair (or the device's own public key), a node
// with a free address (tried in the order nodeOrder gives), the configuration stored, the peer
// pushed to its node, and the file in the chosen format (reference §6.2, §6.3, §7.1).
import type { ProfileNode } from '../../config/portal-config.js';
import type { Transaction } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { activePeers, peersWithKeys, type WireGuardPeer } from '../../storage/wg-peers.js';
import type { UnplacedPeer } from '../../storage/new-peer.js';
import type { WireGuardKey } from '../../shared/ids.js';
import { generateWireGuardKeyPair } from '../../wireguard/keys.js';
import { renderWireGuardFile, type ConfigurationFile, type WireGuardFileFormat } from './configuration-file.js';
import type { PortalContext } from '../context.js';
import { assertPublicKeyUnused } from './device-keys.js';
import type { ConfigurationRef } from '../events.js';
import type { ClosingWrite } from '../../storage/closing-writes.js';
import { keepAnswer, storeConfiguration, storeInOneStatement, type Issue } from './issue.js';
import { nodeOrder, addPeersToNodes, insertAtFreeAddress, insertInOneStatement, readTimeNow } from '../nodes/index.js';
import { appleOnDemandOf, applePlatformOf } from './apple-profile-options.js';
import { formatAtom } from '../../shared/time.js';

/** Thrown inside the transaction when the pool is full, so a user created by this request is rolled back too. */
class PoolFull extends Error {}

/** The file, or null when no node of the profile has a free address (or a WireGuard key). */
export async function issueWireGuard(
  ctx: PortalContext,
  issue: Issue,
  format: WireGuardFileFormat,
): Promise<ConfigurationFile | null> {
  const { request, profile } = issue;
  // A device that keeps its key brings the public half; the file then leaves PrivateKey to it.
  const devicePublicKey = issue.deviceKeys?.wireGuard ?? null;
  const keyPair =
    devicePublicKey === null ? generateWireGuardKeyPair() : { publicKey: devicePublicKey, privateKey: null };
  for (const node of nodeOrder(ctx, profile)) {
    const serverPublicKey = ctx.keys.wireGuardPublicKey(node.nodeNumber);
    if (serverPublicKey === null || node.wireGuard === null) {
      ctx.logger.warn(
        { nodeNumber: node.nodeNumber },
        `node ${node.nodeNumber} has no WireGuard key; run "vpn-portal generate-secrets"`,
      );
      continue;
    }
    const wireGuard = node.wireGuard;
    // Rendered inside the storing transaction (it needs the addresses), where the answer is kept for retries.
    const render = (peer: WireGuardPeer): Promise<ConfigurationFile> =>
      renderWireGuardFile(
        format,
        {
          portalBaseUrl: ctx.config.baseUrl,
          proxy: ctx.config.wireGuard.proxy,
          profileId: profile.profileId,
          profileDisplayName: profile.displayName,
          wireGuard: {
            hostName: node.hostName,
            listenPort: ctx.config.wireGuard.listenPort,
            mtu: ctx.config.wireGuard.mtu,
            serverPublicKey,
            rangeFour: wireGuard.rangeFour,
            rangeSix: wireGuard.rangeSix,
            defaultGateway: profile.defaultGateway,
            dnsServerList: [...profile.dnsServerList],
            dnsSearchDomainList: [...profile.dnsSearchDomainList],
            routeList: [...profile.routeList],
            excludeRouteList: [...profile.excludeRouteList],
            keepAlive: profile.wireGuard?.keepAlive ?? false,
          },
        },
        {
          publicKey: keyPair.publicKey,
          displayName: request.displayName,
          wireGuard: { privateKey: keyPair.privateKey, ipFour: peer.ipFour, ipSix: peer.ipSix },
        },
        {
          platform: applePlatformOf(issue.platform),
          onDemand: appleOnDemandOf(profile, request.onDemand),
          signing: ctx.config.appleSigning,
          signedAt: issue.now,
          deviceId: issue.deviceId,
        },
      );
    const readAt = readTimeNow(ctx);
    const stored = await storePeer(ctx, issue, node, keyPair.publicKey, devicePublicKey !== null, format, render);
    if (stored === null) continue;
    if (stored.wanted) await addPeersToNodes(ctx, [stored.peer], 'create', readAt);
    return stored.file;
  }
  return null;
}

/**
 * Writes the user (when new) and the peer in one transaction; null when the node's pool is full.
 * `wanted`: the peer belongs on its node as stored (false only when read back after a lost
 * answer and revoked meanwhile).
 */
async function storePeer(
  ctx: PortalContext,
  issue: Issue,
  node: ProfileNode,
  publicKey: WireGuardKey,
  /** The device brought the key: it must not be in use anywhere. */
  devicePublicKey: boolean,
  format: WireGuardFileFormat,
  render: (peer: WireGuardPeer) => Promise<ConfigurationFile>,
): Promise<{ readonly peer: WireGuardPeer; readonly wanted: boolean; readonly file: ConfigurationFile } | null> {
  const configuration: ConfigurationRef = {
    userId: issue.request.userId,
    profileId: issue.profile.profileId,
    connectionId: publicKey,
    vpnProto: 'wireguard',
    nodeNumber: node.nodeNumber,
  };
  const unplaced: UnplacedPeer = {
    publicKey,
    userId: issue.request.userId,
    profileId: issue.profile.profileId,
    nodeNumber: node.nodeNumber,
    displayName: issue.request.displayName,
    createdAt: formatAtom(issue.now),
    expiresAt: formatAtom(issue.expiresAt),
    authKey: null,
    expiryWarned: issue.expiryWarned,
    deviceId: issue.deviceId,
  };
  // A key the device brought must be checked unused first: that is a transaction's work.
  if (!devicePublicKey) {
    const stored = await storeInOneStatement(ctx, issue, configuration, {
      run: async (user, closingWrites) => {
        const answer = await insertInOneStatement(ctx.db, node, unplaced, user, closingWrites);
        return 'gaveUp' in answer ? answer : { stored: { peer: answer.stored, wanted: true } };
      },
      committedAnswer: () => readBackCreated(ctx, publicKey),
    });
    if (stored !== null) return { ...stored, file: await render(stored.peer) };
  }
  try {
    return await storeConfiguration(ctx, issue, async (trx) => {
      if (devicePublicKey) await assertPublicKeyUnused(ctx, trx, publicKey);
      // The address is taken last, after every listener's write (src/core/events.ts, last step):
      // the pool's row is then held for the final statement and the commit only.
      const finish = async (last: Transaction<Database>, closingWrites: readonly ClosingWrite[]) => {
        const peer = await insertAtFreeAddress(last, node, unplaced, closingWrites);
        if (peer === null) throw new PoolFull();
        const file = await render(peer);
        await keepAnswer(last, issue, format, file, publicKey);
        return { peer, wanted: true, file };
      };
      return { configuration, finish };
    });
  } catch (error) {
    if (error instanceof PoolFull) return null;
    throw error;
  }
}

/**
 * A create that committed but whose answer was lost with the connection, read back. A
 * revocation may have committed since: it stamped the row with its own revision and sent its
 * removal, and an add at that revision would win the tie on the node. So the node gets the
 * peer only if it is still wanted, read with its state and revision in one statement.
 */
async function readBackCreated(
  ctx: PortalContext,
  publicKey: WireGuardKey,
): Promise<{ readonly peer: WireGuardPeer; readonly wanted: boolean }> {
  const [wanted] = await activePeers(ctx.db, { now: formatAtom(ctx.clock.now()), publicKeys: [publicKey] });
  if (wanted !== undefined) return { peer: wanted, wanted: true };
  const [stored] = await peersWithKeys(ctx.db, [publicKey]);
  if (stored === undefined) throw new Error('a create that committed stored no configuration');
  return { peer: stored, wanted: false };
}
