// The vpn-daemon protocol, portal → node (reference §6.5, §8.5), described once for both ends:
// the paths, the form bodies the portal sends (with the parsers the agent applies before
// anything touches `wg`), and the JSON the node answers. Our extensions are marked; eduVPN's
// own vpn-daemon ignores the fields it does not know and does not send ours, so the portal's
// client reads them as optional.
import { z } from 'zod';
import type { WireGuardKey } from '../shared/ids.js';
import { canonicalNetworkCidr } from '../net/cidr.js';
import { isCanonicalWireGuardKey, isWireGuardKey } from '../wireguard/keys.js';

export const VPN_DAEMON_PATHS = {
  nodeInfo: '/i/node',
  peerList: '/w/peer_list',
  addPeer: '/w/add_peer',
  /** Ours: several add_peer calls in one request, for a node that advertises `add_peers_max`. */
  addPeers: '/w/add_peers',
  removePeer: '/w/remove_peer',
  connectionList: '/o/connection_list',
  disconnectClient: '/o/disconnect_client',
} as const;

/**
 * Ours: how long our agent remembers a removal, so that an add read before it (an older
 * revision) arriving later is ignored. The portal never sends an add whose state it read more
 * than MAX_ADD_READ_AGE_MS before (a portal frozen, a VM paused): by then the agent may have
 * forgotten the removal that overtook it.
 */
export const REMOVAL_MEMORY_MS = 10 * 60_000;
export const MAX_ADD_READ_AGE_MS = REMOVAL_MEMORY_MS / 2;

// ---- Answers ----

/**
 * Ours, in `GET /i/node`: the node's NAT as it programmed it, and since when (`applied_at`,
 * ISO 8601 UTC, so that the portal dates a change by the node's clock, not by when it asked).
 * `deterministic` gives the settings of src/net/deterministic-nat.ts exactly as the node
 * applied them (its client ranges included), so the portal maps a public address and port back
 * to a client the way the node mapped it.
 */
export const natModeSchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('masquerade'), applied_at: z.string() }),
  z.object({
    mode: z.literal('deterministic'),
    applied_at: z.string(),
    ranges: z.array(z.string()).max(10_000),
    public_addresses: z.array(z.string()).min(1).max(65_536),
    ports_per_client: z.number().int().positive(),
  }),
]);
export type NatMode = z.infer<typeof natModeSchema>;

/** `GET /i/node`. */
export const nodeInfoSchema = z.object({
  /** Load average per CPU, in percent. */
  rel_load_average: z.array(z.number()),
  load_average: z.array(z.number()),
  cpu_count: z.number().int(),
  /** Seconds since the host booted. */
  node_uptime: z.number(),
  maintenance_mode: z.boolean(),
  w_peer_count: z.number().int(),
  o_client_count: z.number().int(),
  /** Ours: OpenVPN server processes the agent runs. */
  o_process_count: z.number().int().optional(),
  /** Ours: a new value whenever the node lost its WireGuard peers (agent start, wireguard-go restart). */
  instance_id: z.string().optional(),
  /** Ours: the highest peer instruction revision the agent applied since it started. */
  max_revision: z.number().int().nonnegative().optional(),
  /** Ours: the node takes `/w/add_peers` with up to this many peers per request. */
  add_peers_max: z.number().int().positive().optional(),
  /** Ours: how the node translates its clients' IPv4 traffic; absent: it does not. */
  nat: natModeSchema.optional(),
  v: z.string(),
});
export type NodeInfo = z.infer<typeof nodeInfoSchema>;

/** The longest time a node may write in a peer's entry (ISO 8601: 25 characters with an offset, more with fractions). */
const MAX_TIME_LENGTH = 64;
/** The longest `endpoint` a node may report for a peer. */
export const MAX_ENDPOINT_LENGTH = 64;

/** A peer in `peer_list` and in the `remove_peer` answer. */
export const daemonPeerSchema = z.object({
  public_key: z.string(),
  ip_net: z.array(z.string()),
  /** Omitted when the peer never completed a handshake (ours, vpn-daemon ≥ 3.5.5); older daemons send null. */
  last_handshake_time: z.string().nullable().optional(),
  /** Counters go into the connection log: whole, non-negative, and exact in a double. */
  bytes_in: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  bytes_out: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  /**
   * Ours: where the peer's packets come from (`IP:port`; for WireGuard over TCP the client as the
   * relay saw it); null before any. `[IPv6]:port` takes at most 47 characters.
   */
  endpoint: z.string().max(MAX_ENDPOINT_LENGTH).nullable().optional(),
  /**
   * Ours, in `peer_list`: the first handshake of the peer's current run of handshakes (none 3
   * minutes apart or more), as the node watched them; omitted without a handshake, and for a
   * run the node did not see begin.
   */
  online_since: z.string().max(MAX_TIME_LENGTH).optional(),
});
export type PeerListEntry = z.infer<typeof daemonPeerSchema>;

/** `GET /w/peer_list?show_all=yes|no`. */
export const peerListSchema = z.object({ peer_list: z.array(daemonPeerSchema) });
/** `peer_list` with its entries not yet checked: a client checks them one at a time (daemonPeerSchema). */
export const peerListOutlineSchema = z.object({ peer_list: z.array(z.unknown()) });

/** A client in `GET /o/connection_list`; `ip_six` is null (or empty, from eduVPN's daemon) without an IPv6 pool. */
export const openVpnConnectionSchema = z.object({
  common_name: z.string(),
  ip_four: z.string(),
  ip_six: z.string().nullable(),
});
export const connectionListSchema = z.object({ connection_list: z.array(openVpnConnectionSchema) });

// ---- Requests ----

/** Validated input of the vpn-daemon protocol calls; `error` is a message for a 400 answer. */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

export interface AddPeerRequest {
  readonly publicKey: WireGuardKey;
  readonly allowedIps: readonly string[];
  /** Ours: the portal's order of instructions for this key (src/storage/revisions.ts); null when not sent. */
  readonly revision: number | null;
}

export interface RemovePeerRequest {
  readonly publicKey: WireGuardKey;
  readonly revision: number | null;
}

export interface DisconnectClientRequest {
  readonly commonName: string;
}

/** A peer gets one IPv4 and one IPv6 network from the portal; a few more are tolerated. */
const MAX_IP_NETS = 16;

const wireGuardKeySchema = z.custom<WireGuardKey>(
  (value) => typeof value === 'string' && isWireGuardKey(value),
  'must be a Base64-encoded 32-byte WireGuard key',
);
/**
 * A peer is added only under the canonical encoding of its key (src/wireguard/keys.ts); a
 * non-canonical one may still be removed: it names the same point as a canonical key, and a
 * node that holds it (an older portal put it there) must be able to let it go.
 */
const addedKeySchema = z.tuple(
  [
    wireGuardKeySchema.refine(
      isCanonicalWireGuardKey,
      'must be the canonical encoding of an X25519 key (bit 255 clear, a value below 2^255 − 19)',
    ),
  ],
  { error: 'must be given exactly once' },
);
const publicKeySchema = z.tuple([wireGuardKeySchema], { error: 'must be given exactly once' });

const ipNetSchema = z
  .array(
    z.string().transform((text, context) => {
      const canonical = canonicalNetworkCidr(text);
      if (canonical === null) {
        context.addIssue({ code: 'custom', message: `"${text}" is not a network in CIDR notation` });
        return z.NEVER;
      }
      return canonical;
    }),
  )
  .min(1, 'must be given at least once')
  .max(MAX_IP_NETS, `may be given at most ${MAX_IP_NETS} times`);

/** A revision: a non-negative integer that fits a double exactly. */
const REVISION_PATTERN = /^[0-9]{1,15}$/;
/** Optional, at most once. */
const revisionSchema = z
  .array(z.string().regex(REVISION_PATTERN, 'must be a non-negative integer').transform(Number))
  .max(1, 'may be given at most once')
  .transform((values) => values[0] ?? null);
const addPeerSchema = z.object({ public_key: addedKeySchema, ip_net: ipNetSchema, revision: revisionSchema });
const removePeerSchema = z.object({ public_key: publicKeySchema, revision: revisionSchema });
// The portal's common names are Base64 of 32 bytes (44 characters); a little more is tolerated.
const commonNameSchema = z.tuple(
  [z.string().regex(/^[A-Za-z0-9+/=_.@-]{1,64}$/, 'must be 1 to 64 characters of A-Z a-z 0-9 + / = _ . @ -')],
  {
    error: 'must be given exactly once',
  },
);
const disconnectClientSchema = z.object({ common_name: commonNameSchema });
const peerListQuerySchema = z.object({ show_all: z.enum(['yes', 'no'], 'must be "yes" or "no"') });

/** `public_key=<key>&ip_net=<v4>/32&ip_net=<v6>/128[&revision=N]`: repeated keys, no `[]`. */
export function parseAddPeerForm(form: URLSearchParams): Parsed<AddPeerRequest> {
  const fields = {
    public_key: form.getAll('public_key'),
    ip_net: form.getAll('ip_net'),
    revision: form.getAll('revision'),
  };
  const valid = validAddPeer(fields.public_key, fields.ip_net, fields.revision);
  if (valid !== null) return { ok: true, value: valid };
  const parsed = addPeerSchema.safeParse(fields);
  if (!parsed.success) return { ok: false, error: describe(parsed.error) };
  return {
    ok: true,
    value: { publicKey: parsed.data.public_key[0], allowedIps: parsed.data.ip_net, revision: parsed.data.revision },
  };
}

/**
 * addPeerSchema's checks, written out for the valid form (a portal's reconcile pass sends tens
 * of thousands at once, and the schema took a fifth of the agent's CPU per add_peer);
 * null for anything else, which the schema then refuses with its message.
 */
function validAddPeer(
  publicKeys: readonly string[],
  ipNets: readonly string[],
  revisions: readonly string[],
): AddPeerRequest | null {
  const [publicKey] = publicKeys;
  if (publicKeys.length !== 1 || !isCanonicalWireGuardKey(publicKey)) return null;
  if (ipNets.length < 1 || ipNets.length > MAX_IP_NETS || revisions.length > 1) return null;
  const allowedIps: string[] = [];
  for (const text of ipNets) {
    const canonical = canonicalNetworkCidr(text);
    if (canonical === null) return null;
    allowedIps.push(canonical);
  }
  const [revision] = revisions;
  if (revision === undefined) return { publicKey, allowedIps, revision: null };
  return REVISION_PATTERN.test(revision) ? { publicKey, allowedIps, revision: Number(revision) } : null;
}

/**
 * The most peers one `/w/add_peers` request of our agent takes: what the portal keeps in flight
 * to a node, so one request at a time could carry a whole round of a reconcile pass.
 */
export const MAX_PEERS_PER_ADD = 256;

/**
 * One peer of `/w/add_peers` (ours): `peer=<public_key>,<revision>,<ip_net>[,<ip_net>…]`, the
 * field once per peer, in the order the peers are to be applied. Each peer is exactly an
 * add_peer call with these fields (a revision is required); the request answers 204 once
 * every peer it names is on the interface (or was left out for an older revision), and a
 * single invalid peer refuses the whole request with 400, nothing applied. eduVPN's vpn-daemon
 * does not have the call: the portal uses it only on a node whose `/i/node` has `add_peers_max`.
 */
export function formatAddPeersEntry(peer: {
  readonly publicKey: string;
  readonly revision: number;
  readonly ipNet: readonly string[];
}): string {
  return [peer.publicKey, String(peer.revision), ...peer.ipNet].join(',');
}

export function parseAddPeersForm(form: URLSearchParams): Parsed<readonly AddPeerRequest[]> {
  const entries = form.getAll('peer');
  if (entries.length === 0) return { ok: false, error: 'peer: must be given at least once' };
  if (entries.length > MAX_PEERS_PER_ADD)
    return { ok: false, error: `peer: may be given at most ${MAX_PEERS_PER_ADD} times` };
  const peers: AddPeerRequest[] = [];
  for (const [index, entry] of entries.entries()) {
    const [publicKey = '', revision = '', ...ipNets] = entry.split(',');
    const valid = validAddPeer([publicKey], ipNets, [revision]);
    if (valid !== null) {
      peers.push(valid);
      continue;
    }
    const parsed = addPeerSchema.safeParse({ public_key: [publicKey], ip_net: ipNets, revision: [revision] });
    const error = parsed.success ? 'invalid peer' : describe(parsed.error);
    return { ok: false, error: `peer ${index + 1}: ${error}` };
  }
  return { ok: true, value: peers };
}

export function parseRemovePeerForm(form: URLSearchParams): Parsed<RemovePeerRequest> {
  const parsed = removePeerSchema.safeParse({
    public_key: form.getAll('public_key'),
    revision: form.getAll('revision'),
  });
  if (!parsed.success) return { ok: false, error: describe(parsed.error) };
  return { ok: true, value: { publicKey: parsed.data.public_key[0], revision: parsed.data.revision } };
}

/** `common_name=<CN>`: the OpenVPN client to disconnect. */
export function parseDisconnectClientForm(form: URLSearchParams): Parsed<DisconnectClientRequest> {
  const parsed = disconnectClientSchema.safeParse({ common_name: form.getAll('common_name') });
  if (!parsed.success) return { ok: false, error: describe(parsed.error) };
  return { ok: true, value: { commonName: parsed.data.common_name[0] } };
}

/** `show_all=yes` lists every peer, `no` only the online ones; anything else is refused. */
export function parseShowAll(query: unknown): Parsed<boolean> {
  const parsed = peerListQuerySchema.safeParse(query);
  if (!parsed.success) return { ok: false, error: describe(parsed.error) };
  return { ok: true, value: parsed.data.show_all === 'yes' };
}

function describe(error: z.ZodError): string {
  const [issue] = error.issues;
  if (issue === undefined) return 'invalid request';
  return `${String(issue.path[0] ?? 'request')}: ${issue.message}`;
}
