// One syslog collector of `accounting.syslog.collectors`: a bounded in-memory queue in front of
// a UDP socket, or a TCP or TLS connection (RFC 6587 octet counting, or a line each), reconnected with a
// growing pause while the collector is away. Best effort by design: syslog has no
// acknowledgement, so a message the queue cannot hold is dropped and counted, and one the system
// took just before a connection broke may be lost (one still in the process is sent again on the
// next connection); RADIUS accounting is the durable channel.
// A connection is opened when there is something to send and kept open after; one that takes
// nothing for the stall time is ended as a collector away.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { checkServerIdentity, connect as connectTls } from 'node:tls';
import type { Logger } from 'pino';
import type { SyslogCollectorConfig } from '../../config/portal-config.js';
import {
  framed,
  natChangeMessages,
  sessionMessage,
  type NatChangeRecord,
  type SessionRecord,
  type SyslogOrigin,
} from '../../protocol/syslog.js';
import { messageOf } from '../../shared/error-message.js';
import { deadlineIn, elapsedSince, monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';

/** The first pause before connecting again, doubled after each failure up to the longest. */
const FIRST_PAUSE_MS = 500;
const LONGEST_PAUSE_MS = 30_000;
/**
 * A connection that lasted this long was no failure: the next pause starts from the first again.
 * Durations here are measured on the monotonic clock: a step of the wall clock must neither cut
 * the flush at a stop nor make a connection that lasted a second count as stable.
 */
const STABLE_MS = 10_000;
/** A TCP or TLS connection not established within this time failed. */
const CONNECT_TIMEOUT_MS = 10_000;
/**
 * A TCP or TLS connection whose collector took none of the bytes the process holds for it (the
 * system's buffers full, a write pending) for this long is down: a collector stopped or
 * overloaded, or a half-open connection (its host gone, a firewall that dropped the flow), which
 * the system would otherwise keep retrying for some 15 minutes. A collector that reads, however
 * slowly, takes something well within it.
 */
export const STALL_MS = 30_000;
/**
 * A stalled connection whose collector's host still accepts connections (a collector stopped or
 * overloaded) is ended gracefully: what its system holds goes first, then the next connection
 * opens, so the collector never reads two connections side by side and out of order. It is
 * given this many stall times to hand that over (a flow a firewall dropped never does) before
 * it is cut and the next connection opens anyway.
 */
const STALLED_CLOSE_STALLS = 10;

/** Times a test may shorten. */
export interface SyslogCollectorTiming {
  readonly stallMs?: number;
}

export interface SyslogCollectorState {
  /** Connected and not stalled (TCP, TLS), or the socket is open and no datagram was refused since (UDP). */
  readonly up: boolean;
  readonly queued: number;
  /** Messages the system took since the portal started (TCP, TLS: all of their bytes; UDP: the datagram). */
  readonly sent: number;
  /** Messages dropped since the portal started: the queue was full, or a datagram could not be sent or was refused. */
  readonly dropped: { readonly queueFull: number; readonly sendFailed: number };
}

/** A transport's open channel: takes one message at a time when `ready`. */
interface Link {
  readonly ready: boolean;
  /** Messages written that the system has not taken all of yet. */
  readonly holding: number;
  write(message: string): void;
  close(): Promise<void>;
}

interface LinkEvents {
  /** The link is open and takes messages. */
  up(link: Link): void;
  /**
   * The link could not open, or broke; it is closed. `unsent`: messages written that never left
   * the process, oldest first; `stalled`: closed for taking nothing within the stall time.
   */
  down(error: Error | null, unsent?: readonly string[], stalled?: boolean): void;
  /** The link took nothing within the stall time: it takes no more and closes (`down` follows). */
  stalled(reason: Error): void;
  /** The link can take the next message. */
  ready(): void;
  sent(): void;
  sendFailed(error: Error): void;
}

export class SyslogCollector {
  /** `transport://host:port`: the collector in logs and metrics. */
  readonly name: string;
  readonly #config: SyslogCollectorConfig;
  readonly #logger: Logger;
  readonly #queue = new Queue();
  #link: Link | null = null;
  #opening = false;
  #retry: NodeJS.Timeout | null = null;
  #pauseMs = FIRST_PAUSE_MS;
  /** When the current link came up. */
  #upSince: MonotonicMs = monotonicNow();
  /** Set once a stop began: no message is taken after. */
  #closing = false;
  #closed = false;
  /** Set while the collector is known to be away: it is logged once, and once when it is back. */
  #away = false;
  /**
   * Set when a connection ended for taking nothing within the stall time, until a later one was
   * open a stall time and took the whole queue (#checkBack): meanwhile the collector counts as
   * down though a connection is open.
   */
  #stalled = false;
  readonly #stallMs: number;
  /** Set from a drop for a full queue until a message finds room again: the drops are logged once. */
  #full = false;
  #sent = 0;
  #dropped = { queueFull: 0, sendFailed: 0 };

  /** The header fields and SD-ID of this collector's messages. */
  readonly origin: SyslogOrigin;

  constructor(
    config: SyslogCollectorConfig,
    enterpriseNumber: number,
    logger: Logger,
    timing: SyslogCollectorTiming = {},
  ) {
    this.#config = config;
    this.#stallMs = timing.stallMs ?? STALL_MS;
    this.origin = {
      facility: config.facility,
      hostname: config.hostname,
      appName: config.appName,
      procId: String(process.pid),
      enterpriseNumber,
      structuredData: config.structuredData,
    };
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    this.name = `${config.transport}://${host}:${config.port}`;
    this.#logger = logger.child({ collector: this.name });
  }

  get state(): SyslogCollectorState {
    return {
      up: this.#link !== null && !this.#stalled,
      queued: this.#queue.length,
      sent: this.#sent,
      dropped: { ...this.#dropped },
    };
  }

  /** Queues the message of a session's start or stop, stamped `at` (without the client's address unless the collector takes it). */
  sendSession(record: SessionRecord, at: Date): void {
    const told = this.#config.clientAddress ? record : { ...record, clientAddress: null };
    this.send(sessionMessage(told, this.origin, at));
  }

  /** Queues the messages of a node's NAT mapping change (one unless its addresses need more), stamped `at`. */
  sendNatChange(record: NatChangeRecord, at: Date): void {
    for (const message of natChangeMessages(record, this.origin, at)) this.send(message);
  }

  /** Queues a message for the collector; when the queue is full it is dropped and counted. */
  send(message: string): void {
    if (this.#closing) return;
    if (this.#queue.length >= this.#config.queueSize) {
      // Once a stall: a collector connected but reading nothing (stopped, overloaded) is no less
      // an outage than one away, and a line a dropped message would flood the log.
      if (!this.#full) this.#logger.warn(`syslog queue full (${this.#config.queueSize} messages): dropping messages`);
      this.#full = true;
      this.#dropped.queueFull++;
      return;
    }
    this.#full = false;
    this.#queue.push(message);
    this.#pump();
  }

  /** Stops taking messages, sends what is queued for up to `flushMs`, then closes. */
  async close(flushMs: number): Promise<void> {
    this.#closing = true;
    this.#cancelRetry();
    const flush = deadlineIn(flushMs);
    // A connection being opened (the first message, or one just sent) is waited for too.
    while ((this.#link !== null || this.#opening) && this.#queue.length > 0 && !flush.passed())
      await new Promise((resolve) => setTimeout(resolve, 20));
    this.#closed = true;
    // One a connection that broke during the flush scheduled.
    this.#cancelRetry();
    const link = this.#link;
    this.#link = null;
    await link?.close();
  }

  #cancelRetry(): void {
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
  }

  #pump(): void {
    const link = this.#link;
    if (link === null) {
      this.#open();
      return;
    }
    while (this.#queue.length > 0 && link.ready && this.#link === link) link.write(this.#queue.shift() as string);
  }

  #open(): void {
    if (this.#opening || this.#retry !== null || this.#closed || this.#queue.length === 0) return;
    this.#opening = true;
    const events: LinkEvents = {
      up: (link) => this.#up(link),
      down: (error, unsent, stalled) => this.#down(error, unsent, stalled),
      stalled: (reason) => this.#stalledLink(reason),
      ready: () => this.#pump(),
      sent: () => this.#wasSent(),
      sendFailed: (error) => {
        this.#dropped.sendFailed++;
        this.#logger.warn(`a syslog datagram could not be sent: ${error.message}`);
      },
    };
    openLink(this.#config, events, this.#stallMs);
  }

  #wasSent(): void {
    this.#sent++;
    this.#checkBack();
  }

  /**
   * After a stall, a connection counts as up once it has been open for the stall time without one
   * and its system took the whole queue: a collector still stopped is accepted by its system,
   * which takes bytes until its buffers are full again (as many as before, when messages keep coming).
   */
  #checkBack(): void {
    const link = this.#link;
    if (!this.#stalled || link === null || elapsedSince(this.#upSince) < this.#stallMs) return;
    if (this.#queue.length > 0 || link.holding > 0) return;
    this.#stalled = false;
    if (this.#away) this.#logger.info('syslog collector reachable again; it took the queue');
    this.#away = false;
  }

  #back(): void {
    if (this.#away) this.#logger.info(`syslog collector reachable again; sending ${this.#queue.length} queued`);
    this.#away = false;
  }

  #up(link: Link): void {
    this.#opening = false;
    if (this.#closed) {
      void link.close();
      return;
    }
    this.#link = link;
    this.#upSince = monotonicNow();
    // After a stall, the collector is back once a connection took the queue (#wasSent), not
    // when its system accepts one: it is logged once a stall, not once a connection.
    if (this.#stalled) setTimeout(() => this.#checkBack(), this.#stallMs + 10).unref();
    else this.#back();
    this.#pump();
  }

  /** Down from the stall on, though its connection still closes: messages queue for the next. */
  #stalledLink(reason: Error): void {
    this.#stalled = true;
    if (!this.#away && !this.#closed)
      this.#logger.warn(
        `syslog collector stalled: ${messageOf(reason)}; messages queue (up to ${this.#config.queueSize}) until it has read what it was sent`,
      );
    this.#away = true;
  }

  #down(error: Error | null, unsent: readonly string[] = [], stalled = false): void {
    const wasUp = this.#link !== null;
    this.#link = null;
    this.#opening = false;
    // Ahead of the rest, in their order: they go first on the next connection.
    this.#queue.unshiftAll(unsent);
    if (stalled) this.#stalled = true;
    // A connection that stalled lasted long but failed: the pause keeps growing.
    if (wasUp && !this.#stalled && elapsedSince(this.#upSince) >= STABLE_MS) this.#pauseMs = FIRST_PAUSE_MS;
    if (!this.#away && !this.#closed) {
      this.#logger.warn(
        `syslog collector ${wasUp ? 'connection lost' : 'unreachable'}${error === null ? '' : `: ${messageOf(error)}`}; messages queue (up to ${this.#config.queueSize})`,
      );
    }
    this.#away = true;
    if (this.#closed || this.#queue.length === 0) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#open();
    }, this.#pauseMs);
    this.#retry.unref();
    this.#pauseMs = Math.min(this.#pauseMs * 2, LONGEST_PAUSE_MS);
  }
}

function openLink(config: SyslogCollectorConfig, events: LinkEvents, stallMs: number): void {
  if (config.transport === 'udp') void openDatagramLink(config, events);
  else openStreamLink(config, events, stallMs);
}

/**
 * TCP or TLS: each message framed; the next waits while the socket's buffer is full. A message
 * counts as sent once the system took all of it; what a broken connection still held in the
 * process (its buffer, up to a message past the high-water mark) goes back to the queue. A
 * connection that takes nothing of what the process holds for `stallMs` is ended as a stall:
 * gracefully while the collector's host accepts connections (see STALLED_CLOSE_STALLS), at once
 * when it does not (its host gone: what its system holds is lost either way).
 */
function openStreamLink(
  config: Extract<SyslogCollectorConfig, { transport: 'tcp' | 'tls' }>,
  events: LinkEvents,
  stallMs: number,
): void {
  const socket = connectStream(config);
  let connected = false;
  let failure: Error | null = null;
  let stalled = false;
  /** Messages written whose bytes the system has not all taken yet, oldest first (writes complete in order). */
  const unflushed: string[] = [];
  /** When the system last took a whole message, or the process began to hold one. */
  let progressAt = monotonicNow();
  socket.setTimeout(CONNECT_TIMEOUT_MS, () =>
    socket.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)),
  );
  const link: Link = {
    get ready() {
      // Not once the collector ended the connection: a write after that end is lost.
      return connected && socket.writable && !socket.writableNeedDrain;
    },
    get holding() {
      return unflushed.length;
    },
    write(message) {
      if (unflushed.length === 0) progressAt = monotonicNow();
      unflushed.push(message);
      socket.write(framed(message, config.framing), (error) => {
        // A write still under way when the socket is destroyed is called back without an error,
        // though only part of it may have left: it is sent again (a duplicate at worst, in order).
        if ((error !== null && error !== undefined) || socket.destroyed) return;
        unflushed.shift();
        progressAt = monotonicNow();
        events.sent();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.destroyed) return resolve();
        socket.once('close', () => resolve());
        socket.end();
        setTimeout(() => socket.destroy(), 2_000).unref();
      }),
  };
  // Checked a few times a stall time: a stall is noticed within 1.25 times it.
  const stallCheck = setInterval(
    () => {
      if (stalled || !connected || unflushed.length === 0 || elapsedSince(progressAt) < stallMs) return;
      stalled = true;
      const reason = new Error(`the collector took nothing for ${Math.round(stallMs / 1000)} s`);
      events.stalled(reason);
      endStalled(socket, config, reason, stallMs);
    },
    Math.max(50, Math.floor(stallMs / 4)),
  );
  stallCheck.unref();
  socket.once(config.transport === 'tls' ? 'secureConnect' : 'connect', () => {
    connected = true;
    socket.setTimeout(0);
    // An idle connection whose collector is gone is noticed by the system's keepalive probes
    // (after 30 s idle, then at the system's interval); one with bytes pending, by the stall check.
    socket.setKeepAlive(true, 30_000);
    socket.setNoDelay(true);
    events.up(link);
  });
  socket.on('drain', () => events.ready());
  socket.on('error', (error) => {
    failure = error;
  });
  // The collector sends nothing; reading keeps the socket from holding what it might.
  socket.on('data', () => {});
  socket.on('end', () => socket.end());
  socket.once('close', () => {
    connected = false;
    clearInterval(stallCheck);
    events.down(failure, unflushed.splice(0), stalled);
  });
}

/**
 * Ends a stalled connection: no more writes, and the end follows what the process and its system
 * hold, while the collector's host takes connections (for at most STALLED_CLOSE_STALLS stall
 * times); cut at once when it takes none.
 */
function endStalled(
  socket: Socket,
  config: Extract<SyslogCollectorConfig, { transport: 'tcp' | 'tls' }>,
  reason: Error,
  stallMs: number,
): void {
  socket.end();
  void hostAnswers(config).then((answers) => {
    if (!answers) return socket.destroy(new Error(`${reason.message}, and its host takes no connection`));
    if (socket.destroyed) return;
    const giveUp = setTimeout(() => socket.destroy(reason), STALLED_CLOSE_STALLS * stallMs);
    socket.once('close', () => clearTimeout(giveUp));
  });
}

/** Whether the collector's host takes a TCP connection now (closed at once, nothing sent). */
function hostAnswers(config: Extract<SyslogCollectorConfig, { transport: 'tcp' | 'tls' }>): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connectTcp({ host: config.host, port: config.port });
    const done = (answers: boolean) => {
      probe.destroy();
      resolve(answers);
    };
    probe.setTimeout(CONNECT_TIMEOUT_MS, () => done(false));
    probe.once('connect', () => done(true));
    probe.once('error', () => done(false));
  });
}

/** The TCP or TLS connection to the collector, being opened; a TLS collector's name is checked against `serverName`. */
function connectStream(config: Extract<SyslogCollectorConfig, { transport: 'tcp' | 'tls' }>): Socket {
  if (config.transport === 'tls') {
    const { caPem, serverName } = config;
    return connectTls({
      host: config.host,
      port: config.port,
      ca: caPem,
      // SNI takes names only; the name is checked either way.
      ...(isIP(serverName) === 0 ? { servername: serverName } : {}),
      checkServerIdentity: (_host, certificate) => checkServerIdentity(serverName, certificate),
    });
  }
  return connectTcp({ host: config.host, port: config.port });
}

/** UDP: one datagram a message (RFC 5426), one in flight at a time; a failed send drops it and reopens. */
async function openDatagramLink(config: SyslogCollectorConfig, events: LinkEvents): Promise<void> {
  let socket: UdpSocket;
  try {
    const { family } = await lookup(config.host);
    socket = createSocket(family === 6 ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(config.port, config.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    events.down(error as Error);
    return;
  }
  let inFlight = false;
  let open = true;
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      if (!open) return resolve();
      open = false;
      socket.close(() => resolve());
    });
  /** A send failed, or the collector's host refused a datagram (ICMP port unreachable): counted, and the link is down. */
  const fail = (error: Error): void => {
    if (!open) return;
    events.sendFailed(error);
    void close().then(() => events.down(error));
  };
  const link: Link = {
    get ready() {
      return open && !inFlight;
    },
    get holding() {
      return inFlight ? 1 : 0;
    },
    write(message) {
      inFlight = true;
      socket.send(Buffer.from(message, 'utf8'), (error) => {
        inFlight = false;
        if (error === null || error === undefined) {
          events.sent();
          events.ready();
          return;
        }
        fail(error);
      });
    },
    close,
  };
  // A refusal reaches the send after it only when that send comes at once; one message a while
  // (as sessions come) hears of it here alone: without it, a collector that is down would be up.
  socket.on('error', fail);
  events.up(link);
}

/** A first-in first-out queue of messages whose shift does not move the rest. */
class Queue {
  #items: string[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: string): void {
    this.#items.push(item);
  }

  /** Puts `items` before the rest, in their order. */
  unshiftAll(items: readonly string[]): void {
    if (items.length === 0) return;
    this.#items = [...items, ...this.#items.slice(this.#head)];
    this.#head = 0;
  }

  shift(): string | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head++];
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}
