// GET /connection_list and GET /connected_users. Every configured profile is a key.
// WireGuard, show_all=on: every active configuration (user enabled, not expired), from the
// database; show_all=off: only those whose peer did a handshake in the last 3 minutes.
// OpenVPN, both modes: the clients connected right now with an active configuration (an
// OpenVPN configuration has no state on the node until its client connects).
// Nodes are asked in parallel, except those held for down (a hung node would make every
// listing wait for its timeout): for a node that is down or does not answer now, its last known
// answer is used (none: its connections are left out), and the answer names it among its stale
// nodes (the route sends them in a header). Results are JSON text per profile: the on-case can
// hold 100,000 entries, which the database serialises far faster than JavaScript objects would.
// A WireGuard node's peer list takes its weight from the heap budget the reconcile passes share
// (src/node-client/listing-budget.ts: six full wireguard-go nodes listed at once need some 330 MB
// of a 192 MB heap), and only its online peers' keys and handshakes are kept, now and as the
// node's last known answer.
import type { ConnectionInfo } from '../../protocol/admin-api.js';
import type { NodeNumber, ProfileId, WireGuardKey } from '../../shared/ids.js';
import { activeCertificates } from '../../storage/certificates.js';
import { activePeers, type WireGuardPeer } from '../../storage/wg-peers.js';
import type { NodeAnswer } from '../../node-client/fleet.js';
import type { PortalContext } from '../context.js';
import { visibleNodes, visibleProfiles } from '../access/index.js';
import { isOnline } from '../../shared/online.js';
import { formatAtom } from '../../shared/time.js';
import { appendToJsonArray, jsonPartsText, type JsonParts } from '../../shared/json-parts.js';
import type { ActiveListing } from './pages.js';
import { listIn } from '../../shared/list-in.js';
import type { DaemonPeer } from '../../node-client/daemon-client.js';
import { expectedListingBytes } from '../reconcile/index.js';

/** The JSON text of an array, in parts (see src/shared/json-parts.ts). */
export type JsonArrayParts = JsonParts & { readonly __json: 'array' };

/** Keys per `IN (...)` query, well below every dialect's parameter limit. */
const KEYS_PER_QUERY = 500;

/** A listing per profile, and the nodes whose part of it is their last known state, not their answer now. */
export interface ProfileListings {
  readonly lists: Map<ProfileId, JsonArrayParts>;
  readonly staleNodes: readonly NodeNumber[];
}

export async function listConnections(ctx: PortalContext, showAll: boolean): Promise<ProfileListings> {
  const now = ctx.clock.now();
  const stale = new Set<NodeNumber>();
  const [wireGuardOnline, openVpn] = await Promise.all([
    showAll ? null : onlinePeers(ctx, now, stale),
    connectedOpenVpnClients(ctx, now, stale),
  ]);
  const online = groupByProfile(ctx, wireGuardOnline ?? []);
  return perProfile(ctx, stale, async (profileId) => {
    const openVpnConnections = JSON.stringify(openVpn.get(profileId) ?? []).slice(1, -1);
    if (showAll) return appendToJsonArray((await activeListing(ctx, profileId)).connections, openVpnConnections);
    return [
      JSON.stringify([...(online.get(profileId) ?? []).map(toConnectionInfo), ...(openVpn.get(profileId) ?? [])]),
    ];
  });
}

export async function listConnectedUsers(ctx: PortalContext, showAll: boolean): Promise<ProfileListings> {
  const now = ctx.clock.now();
  const stale = new Set<NodeNumber>();
  const [wireGuardOnline, openVpn] = await Promise.all([
    showAll ? null : onlinePeers(ctx, now, stale),
    connectedOpenVpnClients(ctx, now, stale),
  ]);
  const online = groupByProfile(ctx, wireGuardOnline ?? []);
  return perProfile(ctx, stale, async (profileId) => {
    const openVpnUsers = (openVpn.get(profileId) ?? []).map((connection) => connection.user_id);
    if (showAll) {
      const wireGuard = (await activeListing(ctx, profileId)).userIds();
      if (openVpnUsers.length === 0) return wireGuard;
      return [JSON.stringify([...new Set([...(JSON.parse(jsonPartsText(wireGuard)) as string[]), ...openVpnUsers])])];
    }
    // A user connected several times to one profile is listed once there.
    return [
      JSON.stringify([...new Set([...(online.get(profileId) ?? []).map((peer) => peer.userId), ...openVpnUsers])]),
    ];
  });
}

/** One profile's active WireGuard configurations, from the pages no change touched (./pages.ts). */
function activeListing(ctx: PortalContext, profileId: ProfileId): Promise<ActiveListing> {
  return ctx.listings.pages.read(ctx.db, profileId, formatAtom(ctx.clock.now()));
}

/** Writes `{"<key>": {"<profile>": [...], ...}}` from per-profile JSON arrays. */
export function jsonObjectOfProfiles(key: string, lists: ReadonlyMap<ProfileId, JsonArrayParts>): JsonParts {
  const parts: (string | Buffer)[] = [`{${JSON.stringify(key)}:{`];
  let first = true;
  for (const [profileId, list] of lists) {
    parts.push(`${first ? '' : ','}${JSON.stringify(profileId)}:`, ...list);
    first = false;
  }
  parts.push('}}');
  return parts;
}

/**
 * Every profile the call may see (a key limited to some profiles sees only those), and of the
 * stale nodes those serving one of them: a limited key learns no other node (`profiles` names it
 * only its own profiles' nodes).
 */
async function perProfile(
  ctx: PortalContext,
  stale: ReadonlySet<NodeNumber>,
  list: (profileId: ProfileId) => Promise<JsonParts>,
): Promise<ProfileListings> {
  const lists = new Map<ProfileId, JsonArrayParts>();
  for (const profile of visibleProfiles(ctx, ctx.config.profiles))
    lists.set(profile.profileId, (await list(profile.profileId)) as JsonArrayParts);
  const seen = visibleNodes(ctx);
  const staleNodes = [...stale].filter((nodeNumber) => seen === null || seen.has(nodeNumber)).sort((a, b) => a - b);
  return { lists, staleNodes };
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

/**
 * The OpenVPN clients connected to every node that runs an OpenVPN profile, per profile,
 * limited to active configurations the portal made for that node and profile.
 */
async function connectedOpenVpnClients(
  ctx: PortalContext,
  now: Date,
  stale: Set<NodeNumber>,
): Promise<Map<ProfileId, ConnectionInfo[]>> {
  const byProfile = new Map<ProfileId, ConnectionInfo[]>();
  const reports = await Promise.all(
    nodesRunning(ctx, 'openVpn').map(async (nodeNumber) => ({
      nodeNumber,
      clients: answerOrLastKnown(
        ctx,
        nodeNumber,
        'OpenVPN',
        stale,
        await ctx.nodes.current(nodeNumber, 'connection_list', (daemon) => daemon.openVpnConnectionList()),
        [],
      ),
    })),
  );
  for (const { nodeNumber, clients } of reports) {
    const addressesOf = new Map(clients.map((client) => [client.commonName, client]));
    const names = [...addressesOf.keys()];
    for (let start = 0; start < names.length; start += KEYS_PER_QUERY) {
      const chunk = names.slice(start, start + KEYS_PER_QUERY);
      for (const certificate of await activeCertificates(ctx.db, {
        now: formatAtom(now),
        nodeNumber,
        commonNames: chunk,
      })) {
        const client = addressesOf.get(certificate.commonName);
        if (client === undefined) continue;
        listIn(byProfile, certificate.profileId).push({
          user_id: certificate.userId,
          connection_id: certificate.commonName,
          display_name: certificate.displayName,
          ip_list: client.ipSix === null ? [client.ipFour] : [client.ipFour, client.ipSix],
          vpn_proto: 'openvpn',
          auth_key: certificate.authKey,
        });
      }
    }
  }
  return byProfile;
}

/** The nodes on which at least one profile runs the protocol. */
export function nodesRunning(ctx: PortalContext, protocol: 'wireGuard' | 'openVpn'): NodeNumber[] {
  return [
    ...new Set<NodeNumber>(
      ctx.config.profiles.flatMap((profile) =>
        profile.nodes.filter((node) => node[protocol] !== null).map((node) => node.nodeNumber),
      ),
    ),
  ];
}

async function onlinePeers(ctx: PortalContext, now: Date, stale: Set<NodeNumber>): Promise<WireGuardPeer[]> {
  const reports = await Promise.all(
    nodesRunning(ctx, 'wireGuard').map(async (nodeNumber) => {
      const daemon = ctx.nodes.daemon(nodeNumber);
      const weight = daemon === undefined ? 0 : await expectedListingBytes(ctx, daemon);
      const reply = await ctx.nodes.listingBudget.run(weight, () =>
        ctx.nodes.current(nodeNumber, 'peer_list', async (node) => handshakesOf(await node.peerList(false), now)),
      );
      const handshakes = answerOrLastKnown(ctx, nodeNumber, 'WireGuard', stale, reply, NO_HANDSHAKES);
      // Again at this call's time: the last known answer may be older.
      const online = handshakes.keys.filter((_, index) => isOnline(new Date(handshakes.times[index] ?? 0), now));
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

/**
 * What a listing keeps of a node's peer list, fresh and as the node's last known answer: the keys
 * of the peers online when it answered (a handshake time does not move back, so the others are
 * offline later too) and their handshake times. Some 5 MB for 65,536 online peers, where the
 * converted list held 29 MB.
 */
interface OnlineHandshakes {
  readonly keys: readonly WireGuardKey[];
  /** Milliseconds since the epoch, in the order of `keys`. */
  readonly times: Float64Array;
}

const NO_HANDSHAKES: OnlineHandshakes = { keys: [], times: new Float64Array(0) };

function handshakesOf(peers: readonly DaemonPeer[], now: Date): OnlineHandshakes {
  // Filter here too: the threshold is ours, whatever the node's own idea of "recent".
  const online = peers.filter((peer) => isOnline(peer.lastHandshakeTime, now));
  return {
    keys: online.map((peer) => peer.publicKey),
    times: Float64Array.from(online, (peer) => peer.lastHandshakeTime?.getTime() ?? 0),
  };
}

/**
 * The node's answer now, or else its last known one (nothing when it never answered), noting
 * the node as stale. Said at debug level only: a node held for down was logged when it went down.
 */
function answerOrLastKnown<T>(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  protocol: string,
  stale: Set<NodeNumber>,
  reply: NodeAnswer<T>,
  none: T,
): T {
  if (!reply.stale) return reply.answer;
  stale.add(nodeNumber);
  ctx.logger.debug(
    { nodeNumber },
    reply.answer === undefined
      ? `listing: node ${nodeNumber} does not answer and never did; its ${protocol} connections are missing from this answer`
      : `listing: node ${nodeNumber} does not answer; its ${protocol} connections are as it last answered`,
  );
  return reply.answer ?? none;
}
