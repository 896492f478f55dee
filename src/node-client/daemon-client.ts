// The portal's client for a node's vpn-daemon HTTP protocol (reference §6.5, §8.5): node
// info, WireGuard peer list with handshakes, add and remove peer, OpenVPN client list and
// disconnect. It speaks to our own node agent and to
// an existing eduVPN vpn-daemon alike. Requests carry `Authorization: Bearer <node key>`
// when the portal has a key file for that node. Timeouts are short: a node that does not
// answer must never hold up an Admin API call for long, and neither must one that answers
// slowly without end: every call has a deadline for the whole of it, and a cap on its answer
// sized for what that call may legitimately carry.
//
// Every create pushes one `add_peer`, so the push is on the hot path: one undici connection
// pool per node keeps connections open between calls (no TCP handshake, no `fetch` machinery
// of web streams and abort controllers per call). Requests are not pipelined: eduVPN's own
// vpn-daemon is a plain HTTP/1.1 server, and a slow answer must not hold up the next one.
import { Pool, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  connectionListSchema,
  daemonPeerSchema,
  formatAddPeersEntry,
  nodeInfoSchema,
  type NatMode,
  peerListOutlineSchema,
  VPN_DAEMON_PATHS,
} from '../protocol/vpn-daemon.js';
import type { NodeNumber, WireGuardKey } from '../shared/ids.js';
import { jsonShapeProblem } from '../shared/json-shape.js';
import { AnswerTooLargeError, readBodyWithin } from '../shared/limited-body.js';
import { isCanonicalWireGuardKey } from '../wireguard/keys.js';

export interface DaemonPeer {
  /** As the node sent it: a lenient read takes what eduVPN's vpn-daemon lists, whatever it is. */
  readonly publicKey: WireGuardKey;
  /**
   * False when the key is not the canonical encoding of an X25519 point (src/wireguard/keys.ts),
   * or not a key at all: such a peer is never a wanted one, whatever the database says; reconcile
   * takes it off the node (WireGuard may treat it as the same point as a revoked key).
   */
  readonly canonicalKey: boolean;
  readonly ipNet: readonly string[];
  /** null when the node has seen no handshake from this peer. */
  readonly lastHandshakeTime: Date | null;
  /** The first handshake of the peer's current run, as our agent watched them; null from eduVPN's daemon. */
  readonly onlineSince: Date | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Where the peer's packets come from (our agent only); null when unknown. */
  readonly endpoint: string | null;
}

/** What a removed peer had done, as `remove_peer` answers (null: it was not there). */
export interface RemovedPeer {
  readonly bytesIn: number;
  readonly bytesOut: number;
}

/** A client connected to one of the node's OpenVPN processes (reference §8.5). */
export interface DaemonOpenVpnClient {
  readonly commonName: string;
  readonly ipFour: string;
  readonly ipSix: string | null;
}

export interface DaemonNodeInfo {
  /** Seconds since the node's host booted. */
  readonly nodeUptime: number;
  readonly maintenanceMode: boolean;
  /**
   * Our agent's `instance_id`: a new value whenever the node lost its peers (agent start,
   * wireguard-go restart). Null from a daemon that does not report one (eduVPN's vpn-daemon).
   */
  readonly instanceId: string | null;
  /** Our agent's highest applied revision; null from a daemon that does not report one. */
  readonly maxRevision: number | null;
  /** Our agent takes `addPeers` with up to this many peers; null from a daemon without the call (eduVPN's). */
  readonly addPeersMax: number | null;
  /** Our agent's NAT and since when; null when the node does not report one (no NAT, or eduVPN's daemon). */
  readonly nat: NatMode | null;
  /** Peers on the node's WireGuard interface (`w_peer_count`); null from a daemon that does not report it. */
  readonly peerCount: number | null;
}

/** One peer of an `addPeers` call. */
export interface PeerToAdd {
  readonly publicKey: WireGuardKey;
  readonly ipNet: readonly string[];
  readonly revision: number;
}

/** What the core needs from a node; one instance per node. */
export interface NodeDaemon {
  readonly nodeNumber: NodeNumber;
  readonly url: string;
  /** Bytes of the node's last answered listings (peer_list and connection_list together); null before the first. */
  readonly lastListingBytes: number | null;
  nodeInfo(): Promise<DaemonNodeInfo>;
  peerList(showAll: boolean): Promise<DaemonPeer[]>;
  /** `revision` orders instructions for one key: our agent ignores one older than the last it applied. */
  addPeer(publicKey: WireGuardKey, ipNet: readonly string[], revision: number): Promise<void>;
  /**
   * Several addPeer calls in one request, each peer applied as addPeer applies it: only on a node
   * whose nodeInfo gave `addPeersMax`, with at most that many peers.
   */
  addPeers(peers: readonly PeerToAdd[]): Promise<void>;
  removePeer(publicKey: WireGuardKey, revision: number): Promise<RemovedPeer | null>;
  openVpnConnectionList(): Promise<DaemonOpenVpnClient[]>;
  /** Disconnects every client with this certificate Common Name. */
  disconnectClient(commonName: string): Promise<void>;
  /** Closes the connections kept open to the node. */
  close(): Promise<void>;
}

export class NodeDaemonError extends Error {
  override readonly name: string = 'NodeDaemonError';
  /**
   * Whether the node answered, with an error status or an answer the protocol does not allow,
   * rather than not at all: a node that answers is up, however wrong the answer.
   */
  constructor(
    message: string,
    readonly answered: boolean,
  ) {
    super(message);
  }
}

/**
 * A listing (peer_list, connection_list) longer than the portal reads: the node answers, but it
 * cannot be reconciled, and the revocations waiting on it are never confirmed, until it holds
 * fewer peers (docs/nodes.md, capacity).
 */
export class ListingTooLargeError extends NodeDaemonError {
  override readonly name = 'ListingTooLargeError';

  constructor(
    message: string,
    readonly limitBytes: number,
  ) {
    super(message, true);
  }
}

/**
 * Connections opened to one node at most, and so the instructions in flight to it. A node
 * agent gathers the instructions that wait together into one write to its interface, and
 * receives the next ones while it writes: with twice as many in flight as one batch takes, the
 * two overlap, so a node that restarts empty has 10,000 peers back within about two seconds.
 * Connections are opened as needed and kept: creates at the Admin API's usual concurrency use a
 * handful. eduVPN's vpn-daemon gets the same calls, one per peer, only more of them at once: a Go
 * HTTP server serves each connection on its own goroutine, 256 descriptors are far below its
 * limit (Go raises the soft limit to the hard one), and what it cannot do in parallel waits in
 * it instead of in the portal; over https each connection costs one TLS handshake, once.
 */
export const MAX_CONNECTIONS_PER_NODE = 256;

export interface HttpNodeDaemonOptions {
  readonly nodeNumber: NodeNumber;
  readonly url: string;
  /** Reads the node secret; null sends no Authorization header (e.g. a vpn-daemon behind mutual TLS). */
  readonly secret: () => string | null;
  /**
   * For connecting, for the answer's headers, and between chunks of its body, each; a whole call
   * gets a small multiple of it (callDeadlineMs).
   */
  readonly timeoutMs: number;
  /** Connections the pool may open to the node (default MAX_CONNECTIONS_PER_NODE). */
  readonly connections?: number;
  /** An answer longer than this is cut off there and fails the call (default: the call's own cap, answerCapBytes). */
  readonly maxAnswerBytes?: number;
}

/**
 * How far a node's clock may differ from the portal host's before its handshake times, which the
 * node writes by its own clock, are moved onto the host's: the Date header has whole seconds,
 * and the answer takes a moment to arrive.
 */
export const NODE_CLOCK_TOLERANCE_MS = 5_000;

/**
 * How far the node's clock is behind the portal's (negative: ahead), by the Date header of an
 * answer that arrived at `receivedAt`; 0 within NODE_CLOCK_TOLERANCE_MS or without a valid header.
 */
export function nodeClockLagMs(dateHeader: string | undefined, receivedAt: Date): number {
  const nodeTime = dateHeader === undefined ? Number.NaN : Date.parse(dateHeader);
  if (!Number.isFinite(nodeTime)) return 0;
  const lag = receivedAt.getTime() - nodeTime;
  return Math.abs(lag) > NODE_CLOCK_TOLERANCE_MS ? lag : 0;
}

/**
 * The answer caps. The portal's heap is capped at 192 MB, and an answer costs about its size as
 * bytes, again as a string, and more as parsed objects: a node that answers more than its call
 * may carry (broken, or not a node) costs the portal the cap at most, and only that call fails.
 */
/** add_peer, add_peers, remove_peer, disconnect_client: nothing, an error text, or one peer. */
export const SMALL_ANSWER_BYTES = 64 * 1024;
/**
 * `/i/node`: a few numbers, and with deterministic NAT its settings, which may list 65,536
 * public addresses (18 bytes each, quoted) and 10,000 ranges (at most 46 bytes each): 1.6 MB.
 */
export const NODE_INFO_ANSWER_BYTES = 2 * 1024 * 1024;
/** The most peers one WireGuard interface holds with wireguard-go; a kernel node may hold more. */
const LISTED_ENTRIES = 65_536;
/**
 * A generous size of one listed peer or OpenVPN client: our agent's longest peer entry (key,
 * an IPv4 and an IPv6 network, two times, two 16-digit counters, a 64-character endpoint)
 * is under 450 bytes, a typical one about 250.
 */
const LISTED_ENTRY_BYTES = 512;
/** peer_list and connection_list: 32 MiB, a full wireguard-go interface at the longest entries, about 160,000 typical ones. */
export const LIST_ANSWER_BYTES = LISTED_ENTRIES * LISTED_ENTRY_BYTES;
/**
 * Bytes of an answer's cap per JSON value it may hold (arrays, objects and the commas between
 * entries, counted before parsing). Within its cap a listing of tiny values (`[0,0,…]`,
 * `[{},{},…]`) holds millions, and JSON.parse builds them all at once: 32 MiB of `{},` took far
 * more than the portal's 192 MB heap. A real peer or client entry holds one value per 15 bytes
 * or more (a key or name, addresses, counters), so one per 8 bytes of the cap leaves a full
 * listing of the shortest entries room.
 */
export const ANSWER_BYTES_PER_JSON_VALUE = 8;
/** The slowest link a listing is allowed for: its deadline grows by one second per MiB of its cap. */
const SLOWEST_LISTING_BYTES_PER_SECOND = 1024 * 1024;

/** What one call to a node may read, and how long it may take in all. */
type CallKind = 'small' | 'nodeInfo' | 'listing';

/** The answer cap of a call of this kind. */
export function answerCapBytes(kind: CallKind): number {
  if (kind === 'listing') return LIST_ANSWER_BYTES;
  return kind === 'nodeInfo' ? NODE_INFO_ANSWER_BYTES : SMALL_ANSWER_BYTES;
}

/**
 * The deadline of a whole call (connecting, sending, the headers and the whole body): twice the
 * node timeout, as connecting and the headers may each take one; a listing also gets the time
 * its cap takes at the slowest link allowed (38 s at a 3 s timeout). A node that trickles its
 * answer (each chunk within the timeout, never the end) so fails at the deadline like a node
 * that does not answer.
 */
export function callDeadlineMs(kind: CallKind, timeoutMs: number): number {
  const base = 2 * timeoutMs;
  if (kind !== 'listing') return base;
  return base + Math.ceil((LIST_ANSWER_BYTES / SLOWEST_LISTING_BYTES_PER_SECOND) * 1000);
}

/** A response whose body has been read. */
interface DaemonResponse {
  readonly status: number;
  readonly text: string;
  /** The cap the answer was read within. */
  readonly limitBytes: number;
  /** How far the node's clock is behind the portal host's (nodeClockLagMs). */
  readonly nodeClockLagMs: number;
}

export class HttpNodeDaemon implements NodeDaemon {
  readonly nodeNumber: NodeNumber;
  readonly url: string;
  readonly #pool: Pool;
  /** The path prefix of `url` (a vpn-daemon may sit below one behind a proxy), without a trailing slash. */
  readonly #basePath: string;
  /** Bytes of the last answer to each listing, by its path. */
  readonly #listingBytes = new Map<string, number>();

  constructor(private readonly options: HttpNodeDaemonOptions) {
    this.nodeNumber = options.nodeNumber;
    this.url = options.url;
    const url = new URL(options.url);
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.#pool = new Pool(url.origin, {
      connections: options.connections ?? MAX_CONNECTIONS_PER_NODE,
      pipelining: 1,
      connectTimeout: options.timeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      // A connection unused this long is closed; the node closes idle ones after a while too.
      keepAliveTimeout: 30_000,
    });
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  get lastListingBytes(): number | null {
    if (this.#listingBytes.size === 0) return null;
    let sum = 0;
    for (const bytes of this.#listingBytes.values()) sum += bytes;
    return sum;
  }

  async nodeInfo(): Promise<DaemonNodeInfo> {
    // Older vpn-daemons send fewer fields; only what is there counts.
    const response = await this.request('GET', VPN_DAEMON_PATHS.nodeInfo, 'nodeInfo');
    const info = this.parse(
      nodeInfoSchema.partial(),
      this.json(response, VPN_DAEMON_PATHS.nodeInfo),
      VPN_DAEMON_PATHS.nodeInfo,
    );
    return {
      nodeUptime: info.node_uptime ?? 0,
      maintenanceMode: info.maintenance_mode ?? false,
      instanceId: info.instance_id ?? null,
      maxRevision: info.max_revision ?? null,
      addPeersMax: info.add_peers_max ?? null,
      // Dated by the node's clock: one behind would date a mapping change early, and a report
      // of the minutes before it would be read through the new mapping (another client).
      nat: info.nat == null ? null : { ...info.nat, applied_at: shifted(info.nat.applied_at, response.nodeClockLagMs) },
      peerCount: info.w_peer_count ?? null,
    };
  }

  async peerList(showAll: boolean): Promise<DaemonPeer[]> {
    const path = `${VPN_DAEMON_PATHS.peerList}?show_all=${showAll ? 'yes' : 'no'}`;
    const response = await this.request('GET', path, 'listing');
    const { peer_list: entries } = this.parse(
      peerListOutlineSchema,
      this.json(response, path),
      VPN_DAEMON_PATHS.peerList,
    );
    // A handshake the node dated by a clock minutes behind would look minutes old: never online,
    // so no session, no RADIUS Start, and an abuse report of that moment names nobody.
    const lag = response.nodeClockLagMs;
    // Each entry is checked and converted on its own, so that a long list is not held as a
    // checked copy as well as parsed and converted (the heap is small; see LIST_ANSWER_BYTES).
    return entries.map((entry, index) => {
      const peer = this.parse(daemonPeerSchema, entry, VPN_DAEMON_PATHS.peerList, `peer_list.${index}.`);
      const handshake = nodeTime(peer.last_handshake_time, lag);
      const onlineSince = nodeTime(peer.online_since, lag);
      return {
        publicKey: peer.public_key as WireGuardKey,
        canonicalKey: isCanonicalWireGuardKey(peer.public_key),
        ipNet: peer.ip_net,
        lastHandshakeTime: handshake,
        // Never after the latest handshake: a run starts at or before it.
        onlineSince: onlineSince !== null && handshake !== null && onlineSince <= handshake ? onlineSince : null,
        bytesIn: peer.bytes_in,
        bytesOut: peer.bytes_out,
        endpoint: peer.endpoint ?? null,
      };
    });
  }

  async addPeer(publicKey: WireGuardKey, ipNet: readonly string[], revision: number): Promise<void> {
    const form = new URLSearchParams({ public_key: publicKey });
    for (const net of ipNet) form.append('ip_net', net);
    // An extra field: eduVPN's vpn-daemon ignores it, our agent orders instructions by it.
    form.append('revision', String(revision));
    await this.request('POST', VPN_DAEMON_PATHS.addPeer, 'small', form);
  }

  async addPeers(peers: readonly PeerToAdd[]): Promise<void> {
    const form = new URLSearchParams();
    for (const peer of peers) form.append('peer', formatAddPeersEntry(peer));
    await this.request('POST', VPN_DAEMON_PATHS.addPeers, 'small', form);
  }

  async removePeer(publicKey: WireGuardKey, revision: number): Promise<RemovedPeer | null> {
    const path = VPN_DAEMON_PATHS.removePeer;
    const response = await this.request(
      'POST',
      path,
      'small',
      new URLSearchParams({ public_key: publicKey, revision: String(revision) }),
    );
    // 204: the peer was not there; 200: the peer as it was, with its byte counters.
    if (response.status !== 200) return null;
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      return null;
    }
    const parsed = daemonPeerSchema.safeParse(body);
    return parsed.success ? { bytesIn: parsed.data.bytes_in, bytesOut: parsed.data.bytes_out } : null;
  }

  async openVpnConnectionList(): Promise<DaemonOpenVpnClient[]> {
    const path = VPN_DAEMON_PATHS.connectionList;
    const { connection_list: clients } = this.parse(
      connectionListSchema,
      await this.requestJson('GET', path, 'listing'),
      path,
    );
    return clients.map((client) => ({
      commonName: client.common_name,
      ipFour: client.ip_four,
      ipSix: client.ip_six === null || client.ip_six === '' ? null : client.ip_six,
    }));
  }

  async disconnectClient(commonName: string): Promise<void> {
    await this.request(
      'POST',
      VPN_DAEMON_PATHS.disconnectClient,
      'small',
      new URLSearchParams({ common_name: commonName }),
    );
  }

  /** Fields it does not know are ignored (eduVPN's daemon may add some); missing or mistyped ones are an error. */
  private parse<T>(schema: z.ZodType<T>, body: unknown, path: string, where = ''): T {
    const parsed = schema.safeParse(body);
    if (parsed.success) return parsed.data;
    const [issue] = parsed.error.issues;
    throw new NodeDaemonError(
      `${this.url}${path}: unexpected answer (${issue === undefined ? 'invalid' : `${where}${issue.path.join('.')}: ${issue.message}`})`,
      true,
    );
  }

  private async requestJson(method: 'GET' | 'POST', path: string, kind: CallKind): Promise<unknown> {
    return this.json(await this.request(method, path, kind), path);
  }

  /** The answer parsed; refused unparsed when it holds more JSON values than its cap allows (ANSWER_BYTES_PER_JSON_VALUE). */
  private json(response: DaemonResponse, path: string): unknown {
    const maxValues = Math.floor(response.limitBytes / ANSWER_BYTES_PER_JSON_VALUE);
    if (jsonShapeProblem(response.text, Number.POSITIVE_INFINITY, maxValues) !== null)
      throw new NodeDaemonError(
        `${this.url}${path}: answer holds more than ${maxValues} JSON values (arrays, objects and entries; ` +
          `one per ${ANSWER_BYTES_PER_JSON_VALUE} bytes of its ${response.limitBytes}-byte cap): refused without parsing it`,
        true,
      );
    try {
      return JSON.parse(response.text);
    } catch {
      throw new NodeDaemonError(`${this.url}${path}: answer is not JSON`, true);
    }
  }

  private async request(
    method: 'GET' | 'POST',
    path: string,
    kind: CallKind,
    form?: URLSearchParams,
  ): Promise<DaemonResponse> {
    const headers: Record<string, string> = {};
    const secret = this.options.secret();
    if (secret !== null) headers['authorization'] = `Bearer ${secret}`;
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    let status: number;
    let text: string;
    let lag: number;
    const deadlineMs = callDeadlineMs(kind, this.options.timeoutMs);
    // Aborts the request, or the reading of its body, wherever it is when the deadline passes.
    const deadline = AbortSignal.timeout(deadlineMs);
    const limit = this.options.maxAnswerBytes ?? answerCapBytes(kind);
    try {
      const response: Dispatcher.ResponseData = await this.#pool.request({
        method,
        path: `${this.#basePath}${path}`,
        headers,
        signal: deadline,
        ...(form === undefined ? {} : { body: form.toString() }),
      });
      status = response.statusCode;
      // Taken as the headers arrive: the node wrote its Date then, however long the body takes.
      // The host's real time, not the portal's Clock seam: a test that moves the portal's time
      // on to age a real node's handshakes is not a node whose clock is off.
      lag = nodeClockLagMs(headerText(response.headers['date']), new Date());
      const body = await readBodyWithin(response.body, limit, `node ${this.nodeNumber} (${this.url}${path})`);
      if (kind === 'listing') this.#listingBytes.set(path.split('?')[0] ?? path, body.byteLength);
      text = body.toString('utf8');
    } catch (error) {
      // The node did answer, far too much.
      if (error instanceof AnswerTooLargeError)
        throw kind === 'listing'
          ? new ListingTooLargeError(error.message, error.limitBytes)
          : new NodeDaemonError(error.message, true);
      // Not answered in full in time: the node counts as not answering, as after a timeout.
      if (deadline.aborted) {
        throw new NodeDaemonError(
          `node ${this.nodeNumber} (${this.url}) unreachable: no complete answer to ${path} within ${deadlineMs} ms`,
          false,
        );
      }
      throw new NodeDaemonError(
        `node ${this.nodeNumber} (${this.url}) unreachable: ${(error as Error).message}`,
        false,
      );
    }
    if (status < 200 || status > 299) {
      // A redirect is not followed: a node's answer comes from the node.
      throw new NodeDaemonError(
        `node ${this.nodeNumber} (${this.url}${path}) answered ${status} ${text.slice(0, 200)}`,
        true,
      );
    }
    return { status, text, limitBytes: limit, nodeClockLagMs: lag };
  }
}

/** A time the node wrote moved by `lagMs` onto the portal host's clock; null when absent or no time. */
function nodeTime(text: string | null | undefined, lagMs: number): Date | null {
  if (text == null) return null;
  const time = Date.parse(text);
  return Number.isFinite(time) ? new Date(time + lagMs) : null;
}

/** A time the node wrote (ISO 8601) moved by `lagMs` onto the portal host's clock; text that is no time as it is. */
function shifted(text: string, lagMs: number): string {
  const time = Date.parse(text);
  return lagMs === 0 || !Number.isFinite(time) ? text : new Date(time + lagMs).toISOString();
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
