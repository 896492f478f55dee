// GET /connection_list and GET /connected_users. Every configured profile is a key.
// show_all=on: every active configuration (user enabled, not expired), from the database.
// show_all=off: only those whose peer did a handshake in the last 3 minutes, asked from all
// nodes in parallel; a node that does not answer is logged and its connections left out.
// Results are JSON text per profile: the on-case can hold 100,000 entries, which the
// database serialises far faster than JavaScript objects would.
import type { NodeNumber, ProfileId, VpnProto } from './ids.js';
import { activeConnectionsJson, activePeers, activeUserIdsJson, type WireGuardPeer } from '../storage/wg-peers.js';
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

/** The JSON text of an array. */
export type JsonArrayText = string & { readonly __json: 'array' };

/** Keys per `IN (...)` query, well below every dialect's parameter limit. */
const KEYS_PER_QUERY = 500;

export async function listConnections(ctx: PortalContext, showAll: boolean): Promise<Map<ProfileId, JsonArrayText>> {
  const now = ctx.clock.now();
  if (showAll) {
    return perProfile(ctx, (profileId) => activeConnectionsJson(ctx.db, profileId, formatAtom(now)));
  }
  const online = groupByProfile(ctx, await onlinePeers(ctx, now));
  return perProfile(ctx, async (profileId) => JSON.stringify((online.get(profileId) ?? []).map(toConnectionInfo)));
}

export async function listConnectedUsers(ctx: PortalContext, showAll: boolean): Promise<Map<ProfileId, JsonArrayText>> {
  const now = ctx.clock.now();
  if (showAll) {
    return perProfile(ctx, (profileId) => activeUserIdsJson(ctx.db, profileId, formatAtom(now)));
  }
  const online = groupByProfile(ctx, await onlinePeers(ctx, now));
  // A user connected several times to one profile is listed once there.
  return perProfile(ctx, async (profileId) => JSON.stringify([...new Set((online.get(profileId) ?? []).map((peer) => peer.userId))]));
}

/** Writes `{"<key>": {"<profile>": [...], ...}}` from per-profile JSON arrays. */
export function jsonObjectOfProfiles(key: string, lists: ReadonlyMap<ProfileId, JsonArrayText>): string {
  const members = [...lists].map(([profileId, list]) => `${JSON.stringify(profileId)}:${list}`);
  return `{${JSON.stringify(key)}:{${members.join(',')}}}`;
}

async function perProfile(ctx: PortalContext, list: (profileId: ProfileId) => Promise<string>): Promise<Map<ProfileId, JsonArrayText>> {
  const result = new Map<ProfileId, JsonArrayText>();
  for (const profile of ctx.config.profiles) result.set(profile.profileId, (await list(profile.profileId)) as JsonArrayText);
  return result;
}

function groupByProfile(ctx: PortalContext, peers: readonly WireGuardPeer[]): Map<ProfileId, WireGuardPeer[]> {
  const byProfile = new Map<ProfileId, WireGuardPeer[]>(ctx.config.profiles.map((profile) => [profile.profileId, []]));
  for (const peer of peers) byProfile.get(peer.profileId)?.push(peer);
  return byProfile;
}

function toConnectionInfo(peer: WireGuardPeer): ConnectionInfo {
  return {
    user_id: peer.userId,
    connection_id: peer.publicKey,
    display_name: peer.displayName,
    ip_list: [peer.ipFour, peer.ipSix],
    vpn_proto: 'wireguard',
    auth_key: peer.authKey,
  };
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
      result.push(...(await activePeers(ctx.db, { now: formatAtom(now), nodeNumber, publicKeys: chunk })));
    }
  }
  return result;
}
