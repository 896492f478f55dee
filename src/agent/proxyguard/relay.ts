// The node's ProxyGuard relay (WireGuard over TCP, reference §7.1): a plain HTTP/1.1 endpoint
// behind the site's TLS reverse proxy. `GET <path>` with `Connection: Upgrade` and
// `Upgrade: UoTLV/1` is answered `101 Switching Protocols`, and the connection becomes a tunnel
// to the local WireGuard port (tunnel.ts). Anything else gets a plain-text HTTP
// error and is closed. At most `maxTunnels` tunnels at once: one more takes the place of the
// oldest tunnel WireGuard has not answered yet, so whoever opens tunnels it cannot authenticate
// never locks out real clients. When WireGuard answered every one, it takes the place of the
// oldest tunnel of the client holding the most (client-shares.ts), so whoever holds a valid
// configuration cannot either; only a client holding as many as any other is answered 503.
// Each tunnel's client is remembered by the address WireGuard sees it as (originOf): the TCP
// peer, or behind a trusted reverse proxy the client that proxy names (forwarded-for.ts), and
// still for a while after the tunnel ended (EndedPorts), a while in which no new tunnel takes
// that port.
// Connections that are not a tunnel yet have a small budget and a deadline of their own, so
// slow senders can neither take the tunnels' places nor lock out clients that send at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket as UdpSocket } from 'node:dgram';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ClientShares } from './client-shares.js';
import { forwardedOrigin, formatOrigin, type TcpOrigin } from './forwarded-for.js';
import { judgeRelayRequest, UOTLV_PROTOCOL, type RelayRequest } from './handshake.js';
import { connectUdp, ProxyGuardTunnel, type TunnelLimits, type UdpTarget } from './tunnel.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { unmappedIpv4 } from '../../net/cidr.js';
import { clientNetwork } from '../../net/client-network.js';
import { AwakeClock } from '../../shared/awake-clock.js';
import { LISTEN_BACKLOG } from '../../shared/listen-backlog.js';
import { AtMostEvery, elapsedSince, monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';

export interface ProxyGuardRelayOptions
  extends Partial<Pick<TunnelLimits, 'maxBufferedBytes' | 'stallTimeoutMs' | 'answerTimeoutMs'>> {
  readonly listen: { readonly host: string; readonly port: number };
  /** Where each tunnel's datagrams go: asked per tunnel, so a changed WireGuard port applies to new ones. */
  readonly target: () => UdpTarget;
  /** This node's host names: the last path segment a request may name (besides `/`). */
  readonly hostNames: readonly string[];
  readonly maxTunnels: number;
  readonly idleTimeoutMs: number;
  /** Connections still sending their request, on top of the tunnels; one more takes the oldest one's place. */
  readonly maxPendingRequests?: number;
  /** A connection must have sent its whole request within this time. */
  readonly requestTimeoutMs?: number;
  /** Reverse proxies (CIDR) whose X-Forwarded-For names the client; none when absent. */
  readonly trustedProxyList?: readonly string[];
  readonly logger: Logger;
}

/** About 700 full-size WireGuard packets: a reader that slow is congested, not gone. */
const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;
const DEFAULT_STALL_TIMEOUT_MS = 10_000;
/** A real client's first handshake is answered within a round trip; retries come every 5 s. */
export const DEFAULT_ANSWER_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_PENDING_REQUESTS = 64;
/** A real client sends its few hundred bytes at once; a slow-loris sender is cut off. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/** After a refusal, how long the client has to read it before the socket is destroyed. */
const REFUSAL_LINGER_MS = 2_000;
/** A trusted proxy's malformed X-Forwarded-For is named in the log at most this often. */
const MALFORMED_WARNING_INTERVAL_MS = 60_000;
/** Tunnels evicted for a new one are named in the log at most this often. */
const TUNNEL_EVICTION_WARNING_INTERVAL_MS = 60_000;
/**
 * How long a tunnel's client stays named for its UDP port after the tunnel ended. WireGuard's
 * last packets, and the node's session and NAT accounting, can still name that port shortly
 * after the tunnel closed: "who was on this port" must then still answer with that client.
 */
const ENDED_PORT_HOLD_MS = 3 * 60 * 1000;
/** UDP ports the OS may hand out in a row that a tunnel ended on within ENDED_PORT_HOLD_MS, before the tunnel is refused. */
const MAX_UDP_PORT_ATTEMPTS = 32;

export class ProxyGuardRelay {
  readonly #server: Server;
  readonly #options: ProxyGuardRelayOptions;
  readonly #limits: TunnelLimits;
  readonly #logger: Logger;
  readonly #tunnels = new Set<ProxyGuardTunnel>();
  /** Tunnels WireGuard has not sent a datagram to yet, oldest first: the ones a new tunnel may replace. */
  readonly #unanswered = new Set<ProxyGuardTunnel>();
  /** Open tunnels by client (an IPv4 address or an IPv6 /64): who gives a place once all are answered. */
  readonly #shares = new ClientShares<ProxyGuardTunnel>();
  /** What tunnels measure idleness on: their clients kept sending while the agent stood still. */
  readonly #awake = new AwakeClock();
  /** Local port of each tunnel's UDP socket (what WireGuard sees as the peer's endpoint) → the client's address. */
  readonly #origins = new Map<number, string>();
  /** The same for tunnels that ended within ENDED_PORT_HOLD_MS. */
  readonly #endedPorts = new EndedPorts();
  /** Connections that are not a tunnel (yet): still sending, or being refused. Oldest first. */
  readonly #pending: PendingConnections;
  readonly #trustedProxies: AddressAllowList;
  /** Tunnels being set up (UDP socket connecting): they count against the limit already. */
  #opening = 0;
  #hostNames: ReadonlySet<string>;
  #closing: Promise<void> | null = null;
  #warnedFull = false;
  readonly #malformedWarnings = new AtMostEvery(MALFORMED_WARNING_INTERVAL_MS);
  readonly #evictionWarnings = new AtMostEvery(TUNNEL_EVICTION_WARNING_INTERVAL_MS);

  private constructor(server: Server, options: ProxyGuardRelayOptions) {
    this.#server = server;
    this.#options = options;
    this.#logger = options.logger;
    this.#hostNames = new Set(options.hostNames);
    this.#trustedProxies = new AddressAllowList(options.trustedProxyList ?? []);
    this.#pending = new PendingConnections(
      options.maxPendingRequests ?? DEFAULT_MAX_PENDING_REQUESTS,
      options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      options.logger,
    );
    this.#limits = {
      idleTimeoutMs: options.idleTimeoutMs,
      maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
      stallTimeoutMs: options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
      answerTimeoutMs: options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS,
    };
  }

  static async start(options: ProxyGuardRelayOptions): Promise<ProxyGuardRelay> {
    const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // Node's own timeouts too, though the relay's deadline (below) comes first.
    const server = createServer({ requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs });
    const relay = new ProxyGuardRelay(server, options);
    // Tunnels and handshakes have budgets of their own (no shared server.maxConnections), so
    // connections stuck in their request can never take the place of tunnels.
    server.on('connection', (socket: Socket) => relay.#pending.admit(socket));
    server.on('request', (request: IncomingMessage, response: ServerResponse) =>
      relay.#onPlainRequest(request, response),
    );
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      // A bug in one upgrade must cost that connection, never the agent with every tunnel.
      // Node hands over the connection's net.Socket; its type only says Duplex.
      relay.#onUpgrade(request, socket as Socket, head).catch((error: unknown) => {
        relay.#logger.error({ err: error }, 'ProxyGuard: upgrade failed');
        socket.destroy();
      });
    });
    // Node hands CONNECT over apart from other requests, and without a listener closes it unanswered.
    server.on('connect', (request: IncomingMessage, socket: Duplex) => relay.#onConnect(request, socket as Socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port: options.listen.port, host: options.listen.host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Later failures to accept (such as running out of file descriptors) are logged, not fatal.
    server.on('error', (error) =>
      relay.#logger.error({ err: error }, 'ProxyGuard: the relay cannot accept connections'),
    );
    relay.#awake.start();
    return relay;
  }

  get address(): AddressInfo {
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('the ProxyGuard relay is not listening');
    return address;
  }

  /** Tunnels open or being opened. */
  get tunnelCount(): number {
    return this.#tunnels.size + this.#opening;
  }

  /** Connections that have not finished their upgrade request yet (at most `maxPendingConnections`). */
  get handshakeCount(): number {
    return this.#pending.size;
  }

  /**
   * The client behind an endpoint WireGuard reports (`127.0.0.1:PORT` of a tunnel's UDP socket):
   * the TCP peer, or the client a trusted reverse proxy named (port 0) (`IP:port`, IPv6 in
   * brackets), also for ENDED_PORT_HOLD_MS after that tunnel ended; null for any other endpoint.
   */
  originOf(endpoint: string): string | null {
    const match = /^(?:127\.0\.0\.1|\[::1\]):(\d+)$/.exec(endpoint);
    if (match === null) return null;
    const port = Number(match[1]);
    return this.#origins.get(port) ?? this.#endedPorts.clientOf(port);
  }

  /** The portal's profiles changed: requests for the new names are accepted from now on. */
  setHostNames(hostNames: readonly string[]): void {
    this.#hostNames = new Set(hostNames);
  }

  /** Stops accepting, ends every tunnel (their clients see the TCP connection close), then resolves. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      this.#pending.stop();
      this.#awake.stop();
      this.#server.close(() => resolve());
      for (const tunnel of [...this.#tunnels]) tunnel.end('relay-closing');
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  /** A request without an upgrade to UoTLV/1: always refused, with the reason. */
  #onPlainRequest(request: IncomingMessage, response: ServerResponse): void {
    const verdict = judgeRelayRequest(relayRequestOf(request), this.#hostNames);
    // The judge only lets a request through with "Connection: Upgrade", which Node routes to
    // the upgrade handler; reaching here with it means a request Node did not see as one.
    const refusal =
      verdict.kind === 'refuse'
        ? verdict
        : { status: 400, message: 'malformed upgrade request', headers: {} as Readonly<Record<string, string>> };
    response.writeHead(refusal.status, {
      ...refusal.headers,
      'content-type': 'text/plain; charset=utf-8',
      connection: 'close',
    });
    response.end(`${refusal.message}\n`);
  }

  /** CONNECT: refused like any method but GET (the judge lets only GET through), then closed. */
  #onConnect(request: IncomingMessage, socket: Socket): void {
    socket.on('error', (error) =>
      this.#logger.debug({ reason: error.message }, 'ProxyGuard: connection error on a refused CONNECT'),
    );
    const verdict = judgeRelayRequest(relayRequestOf(request), this.#hostNames);
    if (verdict.kind === 'refuse') refuseRaw(socket, verdict.status, verdict.message, verdict.headers);
    else socket.destroy();
  }

  async #onUpgrade(request: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.on('error', (error) =>
      this.#logger.debug({ reason: error.message }, 'ProxyGuard: connection error before the upgrade'),
    );
    const verdict = judgeRelayRequest(relayRequestOf(request), this.#hostNames);
    if (verdict.kind === 'refuse') {
      refuseRaw(socket, verdict.status, verdict.message, verdict.headers);
      return;
    }

    if (this.#closing !== null) {
      refuseRaw(socket, 503, 'the relay is shutting down', { 'retry-after': '5' });
      return;
    }
    const origin = this.#originOf(request, socket);
    const client = clientNetwork(origin.address);
    if (!this.#hasRoomOrEvictable(client)) {
      this.#refuseFull(socket);
      return;
    }

    // From here the connection counts as a tunnel (being opened), no longer as a handshake;
    // refused ones stay handshakes until they are gone, so refusing costs no extra descriptors.
    this.#pending.release(socket);
    this.#opening += 1;
    let udp: UdpSocket;
    try {
      udp = await this.#connectUdpOnUnheldPort(this.#options.target());
    } catch (error) {
      this.#logger.warn({ reason: (error as Error).message }, 'ProxyGuard: cannot open a UDP socket to WireGuard');
      refuseRaw(socket, 503, 'WireGuard is not reachable from the relay', {});
      return;
    } finally {
      this.#opening -= 1;
    }
    if (socket.destroyed || this.#closing !== null) {
      udp.close();
      socket.destroy();
      return;
    }
    // Only now, with the UDP socket open, does a tunnel give its place: a tunnel that could not
    // open takes none. One that got its answer meanwhile is no longer evictable.
    if (this.tunnelCount >= this.#options.maxTunnels) this.#makeRoomFor(client);
    if (this.tunnelCount >= this.#options.maxTunnels) {
      udp.close();
      this.#refuseFull(socket);
      return;
    }

    socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${UOTLV_PROTOCOL}\r\n\r\n`);
    const localPort = udp.address().port;
    const remote = formatOrigin(origin);
    this.#origins.set(localPort, remote);
    const tunnel: ProxyGuardTunnel = new ProxyGuardTunnel({
      socket,
      udp,
      limits: this.#limits,
      awakeMs: () => this.#awake.now(),
      logger: this.#logger,
      onAnswered: () => this.#unanswered.delete(tunnel),
      onEnd: () => {
        this.#tunnels.delete(tunnel);
        this.#unanswered.delete(tunnel);
        this.#shares.delete(client, tunnel);
        this.#origins.delete(localPort);
        this.#endedPorts.add(localPort, remote);
        if (this.tunnelCount < this.#options.maxTunnels) this.#warnedFull = false;
      },
    });
    this.#tunnels.add(tunnel);
    this.#unanswered.add(tunnel);
    this.#shares.add(client, tunnel);
    this.#logger.debug({ tunnels: this.tunnelCount, remote }, 'ProxyGuard tunnel opened');
    tunnel.start(head);
  }

  /** Below the limit, or a tunnel could give its place to one of `client` (placeFor). */
  #hasRoomOrEvictable(client: string): boolean {
    return this.tunnelCount < this.#options.maxTunnels || this.#placeFor(client) !== undefined;
  }

  /**
   * The tunnel that gives its place to one of `client` on a full relay: the oldest WireGuard has
   * not answered yet (a real client's handshake is answered within a round trip, so such a tunnel
   * is most likely junk that would hold its place until answerTimeoutMs; a real client evicted so
   * retries at once); when every tunnel is answered, the oldest of the client holding the most, so
   * that one valid configuration opened over and over cannot keep every other client out.
   */
  #placeFor(client: string): { readonly tunnel: ProxyGuardTunnel; readonly answered: boolean } | undefined {
    const [oldest] = this.#unanswered;
    if (oldest !== undefined) return { tunnel: oldest, answered: false };
    const largest = this.#shares.oldestOfLargestAbove(client);
    return largest === undefined ? undefined : { tunnel: largest, answered: true };
  }

  #refuseFull(socket: Socket): void {
    if (!this.#warnedFull)
      this.#logger.warn(
        { maxTunnels: this.#options.maxTunnels },
        'ProxyGuard: tunnel limit reached, refusing new tunnels',
      );
    this.#warnedFull = true;
    refuseRaw(socket, 503, `tunnel limit of ${this.#options.maxTunnels} reached`, { 'retry-after': '5' });
  }

  /** The relay is full: the tunnel placeFor names gives its place (none: nothing changes). */
  #makeRoomFor(client: string): void {
    const place = this.#placeFor(client);
    if (place === undefined) return;
    if (this.#evictionWarnings.allow())
      this.#logger.warn(
        place.answered
          ? { maxTunnels: this.#options.maxTunnels, client }
          : { maxTunnels: this.#options.maxTunnels, unanswered: this.#unanswered.size },
        place.answered
          ? 'ProxyGuard: tunnel limit reached; a new client takes the place of the oldest tunnel of the client holding the most'
          : 'ProxyGuard: tunnel limit reached; a new tunnel takes the place of the oldest one WireGuard has not answered',
      );
    place.tunnel.end('evicted');
  }

  /**
   * A UDP socket connected to WireGuard on a port no tunnel ended on within ENDED_PORT_HOLD_MS,
   * so that no port names two clients within that time. A port the OS hands out that one did is
   * kept open while the next one is asked for (so the OS cannot hand it out again), then closed.
   */
  async #connectUdpOnUnheldPort(target: UdpTarget): Promise<UdpSocket> {
    const held: UdpSocket[] = [];
    try {
      for (let attempt = 0; attempt < MAX_UDP_PORT_ATTEMPTS; attempt++) {
        const udp = await connectUdp(target);
        if (!this.#endedPorts.holds(udp.address().port)) return udp;
        held.push(udp);
      }
    } finally {
      for (const udp of held) udp.close();
    }
    throw new Error(
      `the last ${MAX_UDP_PORT_ATTEMPTS} UDP ports the system handed out were each a tunnel's within ${ENDED_PORT_HOLD_MS / 1000} s`,
    );
  }

  /** The tunnel's client as WireGuard would see it had it come straight over UDP. */
  #originOf(request: IncomingMessage, socket: Socket): TcpOrigin {
    // On a socket listening on `::` an IPv4 peer is `::ffff:a.b.c.d`: named by its IPv4 address.
    const peer = { address: unmappedIpv4(socket.remoteAddress ?? ''), port: socket.remotePort ?? 0 };
    const { origin, malformed } = forwardedOrigin(peer, request.headers['x-forwarded-for'], this.#trustedProxies);
    if (malformed !== null && this.#malformedWarnings.allow()) {
      this.#logger.warn(
        { peer: peer.address, entry: malformed },
        'ProxyGuard: a trusted proxy sent an X-Forwarded-For entry that is no IP address; the tunnel is named by the proxy that passed it on',
      );
    }
    return origin;
  }
}

/**
 * The UDP ports of tunnels that ended within ENDED_PORT_HOLD_MS, and the client each one
 * carried: still named for the port, which no new tunnel takes meanwhile.
 */
class EndedPorts {
  /**
   * Port → client and when its tunnel ended, on the monotonic clock (a step of the wall clock
   * must neither forget every client at once nor keep them for hours). Oldest end first.
   */
  readonly #ended = new Map<number, { readonly client: string; readonly endedAt: MonotonicMs }>();

  add(port: number, client: string): void {
    this.#forgetOld();
    // Deleted first, so the Map's order stays the order of the ends.
    this.#ended.delete(port);
    this.#ended.set(port, { client, endedAt: monotonicNow() });
  }

  /** The client of the tunnel that ended on `port` within ENDED_PORT_HOLD_MS; null when none did. */
  clientOf(port: number): string | null {
    this.#forgetOld();
    return this.#ended.get(port)?.client ?? null;
  }

  /** Whether a tunnel ended on `port` within ENDED_PORT_HOLD_MS: no new tunnel may take it yet. */
  holds(port: number): boolean {
    return this.clientOf(port) !== null;
  }

  #forgetOld(): void {
    for (const [port, { endedAt }] of this.#ended) {
      if (elapsedSince(endedAt) < ENDED_PORT_HOLD_MS) return;
      this.#ended.delete(port);
    }
  }
}

/** The oldest pending connection is named in the log at most this often. */
const EVICTION_WARNING_INTERVAL_MS = 60_000;

/**
 * Connections that are not tunnels: still sending their request, or being refused. At most
 * `max` of them, each for at most `timeoutMs`. When every slot is taken, a new connection takes
 * the slot of the oldest one, which is closed: whoever holds slow handshakes cannot lock out
 * real clients, who send their request at once and leave their slot within milliseconds.
 */
class PendingConnections {
  /**
   * Each connection and when it arrived, on the monotonic clock: a step of the wall clock must
   * neither cut every connection at once nor keep them for hours. A Map keeps arrival order,
   * oldest first.
   */
  readonly #arrived = new Map<Socket, MonotonicMs>();
  readonly #max: number;
  readonly #timeoutMs: number;
  readonly #logger: Logger;
  readonly #sweep: NodeJS.Timeout;
  readonly #evictionWarnings = new AtMostEvery(EVICTION_WARNING_INTERVAL_MS);

  constructor(max: number, timeoutMs: number, logger: Logger) {
    this.#max = max;
    this.#timeoutMs = timeoutMs;
    this.#logger = logger;
    // A tenth of the deadline, so a connection is cut at most 10 % late.
    this.#sweep = setInterval(() => this.#expire(), Math.max(50, Math.floor(timeoutMs / 10)));
    this.#sweep.unref();
  }

  get size(): number {
    return this.#arrived.size;
  }

  admit(socket: Socket): void {
    if (this.#arrived.size >= this.#max) {
      const [oldest] = this.#arrived.keys();
      if (oldest !== undefined) {
        this.#arrived.delete(oldest);
        oldest.destroy();
        this.#warnEvicting();
      }
    }
    this.#arrived.set(socket, monotonicNow());
    socket.once('close', () => this.#arrived.delete(socket));
  }

  /** The connection became a tunnel: it no longer holds a handshake slot. */
  release(socket: Socket): void {
    this.#arrived.delete(socket);
  }

  stop(): void {
    clearInterval(this.#sweep);
  }

  #expire(): void {
    for (const [socket, arrived] of this.#arrived) {
      if (elapsedSince(arrived) < this.#timeoutMs) return;
      this.#arrived.delete(socket);
      socket.destroy();
    }
  }

  #warnEvicting(): void {
    if (!this.#evictionWarnings.allow()) return;
    this.#logger.warn(
      { maxPendingRequests: this.#max },
      "ProxyGuard: every handshake slot is taken (slow or stuck clients); new connections take the oldest ones' slots",
    );
  }
}

function relayRequestOf(request: IncomingMessage): RelayRequest {
  return {
    method: request.method ?? '',
    url: request.url ?? '',
    httpVersion: request.httpVersion,
    upgrade: request.headers.upgrade,
    connection: request.headers.connection,
  };
}

/** Writes a plain-text HTTP error on a socket the HTTP server has handed over, then closes it. */
function refuseRaw(socket: Socket, status: number, message: string, headers: Readonly<Record<string, string>>): void {
  const body = `${message}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  // Ending (not destroying) lets the answer arrive even when the client already sent frames;
  // whatever it sends meanwhile is read and discarded, then the socket goes.
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  socket.resume();
  socket.once('end', () => socket.destroy());
  setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref();
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  426: 'Upgrade Required',
  503: 'Service Unavailable',
};
