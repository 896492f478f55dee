// Pushing WireGuard peers to their nodes, best effort: failures are logged by the fleet and
// repaired by the next reconcile.
import type { WireGuardPeer } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { forEachLimited } from './limited-parallel.js';

const PUSH_PARALLELISM = 16;

export function peerIpNet(peer: Pick<WireGuardPeer, 'ipFour' | 'ipSix'>): string[] {
  return [`${peer.ipFour}/32`, `${peer.ipSix}/128`];
}

export async function removePeersFromNodes(ctx: PortalContext, peers: readonly WireGuardPeer[]): Promise<void> {
  await forEachLimited(peers, PUSH_PARALLELISM, async (peer) => {
    await ctx.nodes.tryOn(peer.nodeNumber, 'remove_peer', (daemon) => daemon.removePeer(peer.publicKey));
  });
}

export async function addPeersToNodes(ctx: PortalContext, peers: readonly WireGuardPeer[]): Promise<void> {
  await forEachLimited(peers, PUSH_PARALLELISM, async (peer) => {
    await ctx.nodes.tryOn(peer.nodeNumber, 'add_peer', (daemon) => daemon.addPeer(peer.publicKey, peerIpNet(peer)));
  });
}
