// Pushing WireGuard peer changes to their nodes, right after the database changed. Each push
// carries the revision of the state it comes from, so the node never lets an older add undo a
// newer removal (src/storage/revisions.ts). A node that is down or fails does not fail the
// call: the database already holds the truth, the fleet asks the node again every second and
// reconciles it as soon as it answers. A removal that could not be pushed is said at warn
// level, because until then that tunnel still passes traffic.
import type { NodeNumber, WireGuardKey } from '../../shared/ids.js';
import type { Revision } from '../../storage/revisions.js';
import type { WireGuardPeer } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { pushToNodes } from './push.js';
import { ageOfRead, youngEnoughToSend, type ReadTime } from './read-age.js';
import { endSessionsOfRemovedPeers } from '../sessions/index.js';
import { isCanonicalWireGuardKey } from '../../wireguard/keys.js';

/** A peer that must leave its node, with the revision of the change that says so. */
export interface PeerRemoval {
  readonly publicKey: WireGuardKey;
  readonly nodeNumber: NodeNumber;
  readonly revision: Revision;
}

export function peerIpNet(peer: Pick<WireGuardPeer, 'ipFour' | 'ipSix'>): string[] {
  return [`${peer.ipFour}/32`, `${peer.ipSix}/128`];
}

/** Removals for peers a transaction just deleted or disabled, all under that transaction's revision. */
export function removalsOf(peers: readonly WireGuardPeer[], revision?: Revision): PeerRemoval[] {
  return peers.map((peer) => ({
    publicKey: peer.publicKey,
    nodeNumber: peer.nodeNumber,
    revision: revision ?? peer.revision,
  }));
}

/**
 * `why` names the call (e.g. "disable_user") in the warning about nodes that did not get it.
 * Answers the removals the nodes took (for the revocation receipt).
 */
export async function removePeersFromNodes(
  ctx: PortalContext,
  removals: readonly PeerRemoval[],
  why: string,
): Promise<readonly PeerRemoval[]> {
  const { missed, done } = await pushToNodes(
    ctx,
    removals,
    'remove_peer',
    'glance',
    (removal) => removal.nodeNumber,
    (daemon, removal) => daemon.removePeer(removal.publicKey, removal.revision),
  );
  for (const [nodeNumber, count] of missed) {
    ctx.logger.warn(
      { nodeNumber, peers: count, call: why },
      `${why}: node ${nodeNumber} did not get the removal of ${count} peer(s); its tunnels pass traffic until the node answers again and is reconciled`,
    );
  }
  // The removal itself committed before this was called and the nodes took it: a database that
  // fails now (even after the seam's retries) must not turn the call's answer into an error. The
  // sessions stay open in the connection log until the next full reconcile pass sees the peers
  // gone from their nodes and ends them (without the counters the removal answered).
  await endSessionsOfRemovedPeers(
    ctx,
    done.map(({ item, answer }) => ({ publicKey: item.publicKey, nodeNumber: item.nodeNumber, answer })),
  ).catch((error: unknown) =>
    ctx.logger.warn(
      { err: error, call: why, peers: done.length },
      `${why}: the sessions of the removed peers could not be ended in the connection log; the next full reconcile pass ends them`,
    ),
  );
  return done.map(({ item }) => item);
}

/**
 * `readAt`: when the state the peers come from was read (src/core/nodes/read-age.ts); a push it
 * is too old for by the time its turn comes is not sent, and the next reconcile pass sends what
 * is still wanted.
 */
export async function addPeersToNodes(
  ctx: PortalContext,
  peers: readonly WireGuardPeer[],
  why: string,
  readAt: ReadTime,
): Promise<void> {
  const { missed, done } = await pushToNodes(
    ctx,
    // Never a non-canonical key (one stored before the check): reconcile takes it off instead.
    peers.filter((peer) => isCanonicalWireGuardKey(peer.publicKey)),
    'add_peer',
    'skip',
    (peer) => peer.nodeNumber,
    async (daemon, peer) => {
      if (!youngEnoughToSend(ctx, readAt)) return 'too-old' as const;
      await daemon.addPeer(peer.publicKey, peerIpNet(peer), peer.revision);
      return 'sent' as const;
    },
  );
  for (const [nodeNumber, count] of missed) {
    ctx.logger.info(
      { nodeNumber, peers: count, call: why },
      `${why}: node ${nodeNumber} gets ${count} peer(s) as soon as it answers again`,
    );
  }
  const tooOld = done.filter(({ answer }) => answer === 'too-old').length;
  if (tooOld > 0)
    ctx.logger.warn(
      { peers: tooOld, call: why, readAgoMs: Math.round(ageOfRead(ctx, readAt)) },
      `${why}: ${tooOld} peer(s) not sent, read too long ago (the portal stood still?); the next reconcile pass sends what is still wanted`,
    );
}
