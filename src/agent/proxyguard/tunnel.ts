// One ProxyGuard tunnel: an upgraded TCP connection and its own UDP socket, connected to the
// node's WireGuard port. Datagrams from WireGuard are framed onto the TCP stream; frames from
// the stream are sent as datagrams. A tunnel only ever ends itself; it never touches another.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { encodeFrame, FrameDecoder } from './frames.js';

export interface UdpTarget {
  readonly host: string;
  readonly port: number;
}

export interface TunnelLimits {
  /**
   * Not both a byte from the client and a datagram from WireGuard within this long: the device
   * is gone. Bytes from the client alone do not count: junk that WireGuard drops unanswered
   * would otherwise hold a tunnel for good.
   */
  readonly idleTimeoutMs: number;
  /**
   * No datagram from WireGuard within this long after the upgrade: not a WireGuard client (a
   * real one gets its handshake answered within a round trip), so the tunnel is ended.
   */
  readonly answerTimeoutMs: number;
  /** Frames waiting for a slow reader beyond this are dropped (as a congested UDP path drops). */
  readonly maxBufferedBytes: number;
  /** A reader that has not caught up for this long, while frames are being dropped, is cut off. */
  readonly stallTimeoutMs: number;
}

export type TunnelEndReason =
  /** The client closed its side (FIN). */
  | 'client-closed'
  /** A length prefix of 0, or larger than a UDP datagram can be. */
  | 'protocol-error'
  | 'idle'
  /** WireGuard never sent anything back within answerTimeoutMs of the upgrade. */
  | 'unanswered'
  | 'stalled'
  | 'socket-error'
  | 'relay-closing'
  /** The relay was full and needed the place of a tunnel WireGuard has not answered yet. */
  | 'evicted';

/**
 * A WireGuard cookie reply (message type 3, 64 bytes): sent under load to any initiation whose
 * mac1 is right, and mac1 needs only the server's public key, which every client has. It proves
 * nothing about the client, so it does not make a tunnel one WireGuard answered.
 */
function isCookieReply(datagram: Buffer): boolean {
  return datagram.length === 64 && datagram.readUInt32LE(0) === 3;
}

/** Datagrams to WireGuard queued in the UDP socket beyond this are dropped. */
const MAX_UDP_SEND_QUEUE = 1024;
/** After a graceful end, how long the client has to read what is left before the socket is destroyed. */
const CLOSE_GRACE_MS = 5_000;
const TCP_KEEPALIVE_DELAY_MS = 30_000;

/** Connects a UDP socket to the target; the tunnel owns it from then on. */
export async function connectUdp(target: UdpTarget): Promise<UdpSocket> {
  const udp = createSocket({ type: target.host.includes(':') ? 'udp6' : 'udp4' });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    udp.once('error', onError);
    // A failed connect (no route, say with the loopback down) comes to the callback, not as an
    // 'error' event, though Node's types give the callback no argument. Taken for a success, it
    // left an unconnected socket whose first send threw and ended the agent.
    udp.connect(target.port, target.host, (error?: Error) => {
      udp.off('error', onError);
      if (error === undefined) resolve();
      else reject(error);
    });
  }).catch((error: unknown) => {
    udp.close();
    throw error;
  });
  return udp;
}

export class ProxyGuardTunnel {
  readonly #socket: Socket;
  readonly #udp: UdpSocket;
  readonly #limits: TunnelLimits;
  readonly #logger: Logger;
  readonly #onEnd: (reason: TunnelEndReason) => void;
  readonly #onAnswered: () => void;
  readonly #decoder = new FrameDecoder();
  #ended = false;
  /** WireGuard sent something other than a cookie reply: it knows the client (onAnswered). */
  #answered = false;
  #stallTimer: NodeJS.Timeout | null = null;
  #droppedToClient = 0;
  #droppedToWireGuard = 0;
  #idleTimer: NodeJS.Timeout | null = null;
  /** The relay's time awake, in ms: a stretch the agent stood still does not make a tunnel idle. */
  readonly #awakeMs: () => number;
  /** Awake milliseconds; the upgrade counts as a byte from the client. */
  #lastFromClientMs = 0;
  /** Null until WireGuard has sent its first datagram. */
  #lastFromWireGuardMs: number | null = null;
  #startedMs = 0;

  /** Takes over a socket that has just been switched to UoTLV/1 and a connected UDP socket. */
  constructor(options: {
    readonly socket: Socket;
    readonly udp: UdpSocket;
    readonly limits: TunnelLimits;
    readonly awakeMs: () => number;
    readonly logger: Logger;
    readonly onEnd: (reason: TunnelEndReason) => void;
    /** WireGuard sent its first datagram other than a cookie reply: the client proved itself a peer (a handshake answered). */
    readonly onAnswered?: () => void;
  }) {
    this.#socket = options.socket;
    this.#udp = options.udp;
    this.#limits = options.limits;
    this.#awakeMs = options.awakeMs;
    this.#logger = options.logger;
    this.#onEnd = options.onEnd;
    this.#onAnswered = options.onAnswered ?? (() => {});
  }

  /** Starts relaying; `head` holds bytes the client sent right behind its request (already frames). */
  start(head: Buffer): void {
    const socket = this.#socket;
    socket.setNoDelay(true); // frames are small and latency matters more than packing them
    socket.setKeepAlive(true, TCP_KEEPALIVE_DELAY_MS);
    this.#startedMs = this.#awakeMs();
    this.#lastFromClientMs = this.#startedMs;
    this.#scheduleIdleCheck();
    socket.on('data', (chunk: Buffer) => this.#fromClient(chunk));
    // The HTTP server allows half-open sockets: a client that is done writing is done.
    socket.on('end', () => this.end('client-closed'));
    socket.on('error', (error) => {
      this.#logger.debug({ reason: error.message }, 'ProxyGuard tunnel: TCP error');
      this.end('socket-error');
    });
    socket.on('close', () => this.end('socket-error'));
    socket.on('drain', () => this.#clearStall());

    this.#udp.on('message', (datagram) => this.#fromWireGuard(datagram));
    // ICMP "port unreachable" while WireGuard restarts: UDP may lose datagrams, the tunnel stays.
    this.#udp.on('error', (error) => this.#logger.debug({ reason: error.message }, 'ProxyGuard tunnel: UDP error'));

    if (head.length > 0) this.#fromClient(head);
  }

  /** Ends the tunnel once; later calls do nothing. */
  end(reason: TunnelEndReason): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#clearStall();
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
    this.#udp.close();
    if (reason === 'client-closed') {
      // Let what is already queued reach the client, then close; never wait for it forever.
      this.#socket.end();
      setTimeout(() => this.#socket.destroy(), CLOSE_GRACE_MS).unref();
    } else {
      this.#socket.destroy();
    }
    this.#logger.debug(
      { reason, droppedToClient: this.#droppedToClient, droppedToWireGuard: this.#droppedToWireGuard },
      'ProxyGuard tunnel ended',
    );
    this.#onEnd(reason);
  }

  #fromClient(chunk: Buffer): void {
    if (this.#ended) return;
    this.#lastFromClientMs = this.#awakeMs();
    const decoded = this.#decoder.push(chunk);
    for (const datagram of decoded.datagrams) {
      if (this.#udp.getSendQueueCount() > MAX_UDP_SEND_QUEUE) {
        this.#droppedToWireGuard += 1;
        continue;
      }
      this.#udp.send(datagram, (error) => {
        if (error !== null) this.#logger.debug({ reason: error.message }, 'ProxyGuard tunnel: datagram not sent');
      });
    }
    if (decoded.error !== null) {
      this.#logger.info({ reason: decoded.error }, 'ProxyGuard tunnel closed: protocol error');
      this.end('protocol-error');
    }
  }

  #fromWireGuard(datagram: Buffer): void {
    // WireGuard never sends an empty datagram, and an empty frame would be a protocol error.
    if (this.#ended || datagram.length === 0) return;
    this.#lastFromWireGuardMs = this.#awakeMs();
    if (!this.#answered && !isCookieReply(datagram)) {
      this.#answered = true;
      this.#onAnswered();
    }
    if (this.#isBacklogged()) {
      this.#droppedToClient += 1;
      this.#stallTimer ??= setTimeout(() => {
        this.#stallTimer = null;
        if (this.#isBacklogged()) this.end('stalled');
      }, this.#limits.stallTimeoutMs);
      return;
    }
    // The client has caught up below the bound: it is slow at worst, not stalled.
    this.#clearStall();
    this.#socket.write(encodeFrame(datagram));
  }

  /**
   * When the tunnel ends unless traffic comes: answerTimeoutMs after the upgrade while WireGuard
   * has sent nothing but cookie replies (which anyone can get), then idleTimeoutMs after the older of the last byte from the client and the
   * last datagram from WireGuard. One timer, moved on when it fires, not on every frame.
   */
  #deadline(): { atMs: number; reason: 'idle' | 'unanswered' } {
    const idle = {
      atMs: Math.min(this.#lastFromClientMs, this.#lastFromWireGuardMs ?? this.#startedMs) + this.#limits.idleTimeoutMs,
      reason: 'idle',
    } as const;
    if (this.#answered) return idle;
    const unanswered = { atMs: this.#startedMs + this.#limits.answerTimeoutMs, reason: 'unanswered' } as const;
    return unanswered.atMs <= idle.atMs ? unanswered : idle;
  }

  #scheduleIdleCheck(): void {
    const deadline = this.#deadline();
    const waitMs = deadline.atMs - this.#awakeMs();
    if (waitMs <= 0) {
      if (deadline.reason === 'unanswered')
        this.#logger.info('ProxyGuard tunnel closed: WireGuard never answered (not a WireGuard client)');
      this.end(deadline.reason);
      return;
    }
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = null;
      if (!this.#ended) this.#scheduleIdleCheck();
    }, Math.ceil(waitMs));
  }

  #isBacklogged(): boolean {
    return this.#socket.writableLength > this.#limits.maxBufferedBytes;
  }

  #clearStall(): void {
    if (this.#stallTimer === null) return;
    clearTimeout(this.#stallTimer);
    this.#stallTimer = null;
  }
}
