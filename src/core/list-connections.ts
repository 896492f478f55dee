// GET /connection_list and GET /connected_users. Every configured profile is a key.
// show_all=on: every active configuration (user enabled, not expired), from the database.
// show_all=off: only those whose peer did a handshake in the last 3 minutes, asked from all
// nodes in parallel; a node that does not answer is logged and its connections left out.
import type { NodeNumber, ProfileId, VpnProto } from './ids.js';
import { activePeers, type WireGuardPeer } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { isOnline } from './online.js';
import { formatAtom } from './time.js';

export interface ConnectionInfo {
  readonly user_id: string;
  readonly connection_id: string;
  readonly display_name: string;
  readonly ip_list: readonly string[];
  readonly vpn_proto: VpnProto;
  readonly auth_key: string | null;
}

/** Keys per `IN (...)` query, well below every dialect's parameter limit. */
const KEYS_PER_QUERY = 500;

export async function listConnections(ctx: PortalContext, showAll: boolean): Promise<Map<ProfileId, ConnectionInfo[]>> {
  const now = ctx.clock.now();
  const peers = showAll ? await activePeers(ctx.db, { now: formatAtom(now) }) : await onlinePeers(ctx, now);
  const byProfile = new Map<ProfileId, ConnectionInfo[]>(ctx.config.profiles.map((profile) => [profile.profileId, []]));
  for (const peer of peers) {
    byProfile.get(peer.profileId)?.push({
      user_id: peer.userId,
      connection_id: peer.publicKey,
      display_name: peer.displayName,
      ip_list: [peer.ipFour, peer.ipSix],
      vpn_proto: 'wireguard',
      auth_key: peer.authKey,
    });
  }
  return byProfile;
}

export async function listConnectedUsers(ctx: PortalContext, showAll: boolean): Promise<Map<ProfileId, string[]>> {
  const connections = await listConnections(ctx, showAll);
  return new Map([...connections].map(([profileId, list]) => [profileId, [...new Set(list.map((entry) => entry.user_id))]]));
}

async function onlinePeers(ctx: PortalContext, now: Date): Promise<WireGuardPeer[]> {
  const nodesWithWireGuard = new Set<NodeNumber>(
    ctx.config.profiles.flatMap((profile) => profile.nodes.filter((node) => node.wireGuard !== null).map((node) => node.nodeNumber)),
  );
  const reports = await Promise.all(
    [...nodesWithWireGuard].map(async (nodeNumber) => {
      const list = await ctx.nodes.tryOn(nodeNumber, 'peer_list', (daemon) => daemon.peerList(false));
      // Filter here too: the threshold is ours, whatever the node's own idea of "recent".
      const online = (list ?? []).filter((peer) => isOnline(peer.lastHandshakeTime, now)).map((peer) => peer.publicKey);
      return { nodeNumber, online };
    }),
  );
  const result: WireGuardPeer[] = [];
  for (const { nodeNumber, online } of reports) {
    for (let start = 0; start < online.length; start += KEYS_PER_QUERY) {
      const chunk = online.slice(start, start + KEYS_PER_QUERY);
      const peers = await activePeers(ctx.db, { now: formatAtom(now), nodeNumber, publicKeys: chunk });
      result.push(...peers);
    }
  }
  return result;
}
