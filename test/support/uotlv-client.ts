// The client side of ProxyGuard's UoTLV/1, written for the tests independently of the relay's
// own code (so a byte-order mistake on one side cannot hide behind the same mistake on the
// other): the HTTP upgrade, the 2-byte big-endian framing, and a local UDP listener that a
// real WireGuard client uses as its `Endpoint = 127.0.0.1:51820`.
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

export interface TcpAddress {
  readonly host: string;
  readonly port: number;
}

export interface UotlvTunnel {
  readonly socket: Socket;
  /** Sends one datagram as one frame. */
  send(datagram: Uint8Array): void;
  /**
   * The next datagram the relay sent (collected from the upgrade on); rejects once the tunnel
   * is closed, or after `timeoutMs` (default 5 s; Infinity waits as long as the tunnel lives).
   */
  next(timeoutMs?: number): Promise<Buffer>;
  /** Resolves when the relay has closed the connection (end or reset). */
  readonly closed: Promise<void>;
}

/** A refused upgrade: the relay's status line, headers and body. */
export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly headers: ReadonlyMap<string, string>,
    readonly body: string,
  ) {
    super(`upgrade refused with ${status}: ${body.trim()}`);
  }
}

/** `<length, 2 bytes, big-endian><datagram>`, written byte by byte so the order is explicit. */
export function uotlvFrame(datagram: Uint8Array): Buffer {
  const length = datagram.length;
  return Buffer.concat([Buffer.from([(length >> 8) & 0xff, length & 0xff]), datagram]);
}

/**
 * The upgrade request a ProxyGuard client sends for `url`, exactly as bytes on the wire;
 * `headers` (name and value, written as given) as a reverse proxy in front of the relay adds them.
 */
export function upgradeRequest(url: URL, headers: readonly (readonly [string, string])[] = []): string {
  const extra = headers.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: Upgrade\r\nUpgrade: UoTLV/1\r\n${extra}\r\n`;
}

/**
 * Opens a tunnel to `proxyEndpoint`, at `connectTo` when given (the relay's real address),
 * else at the URL's own host and port. `https:` speaks TLS 1.3 only (as proxyguard-client),
 * trusting `ca` (PEM). `extra` is written in the same TCP segment as the request, as an eager
 * client may; `headers` are added to the request, as a proxy adds X-Forwarded-For.
 */
export async function openUotlvTunnel(
  proxyEndpoint: string,
  options: {
    connectTo?: TcpAddress;
    extra?: Buffer;
    ca?: string;
    headers?: readonly (readonly [string, string])[];
  } = {},
): Promise<UotlvTunnel> {
  const url = new URL(proxyEndpoint);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`the test client speaks HTTP and HTTPS only, not ${url.protocol}`);
  const tls = url.protocol === 'https:';
  const address = options.connectTo ?? { host: url.hostname, port: Number(url.port || (tls ? 443 : 80)) };
  const socket: Socket = tls
    ? connectTls({
        host: address.host,
        port: address.port,
        minVersion: 'TLSv1.3',
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      })
    : connect(address.port, address.host);
  await once(socket, tls ? 'secureConnect' : 'connect');
  socket.setNoDelay(true);
  socket.write(Buffer.concat([Buffer.from(upgradeRequest(url, options.headers)), options.extra ?? Buffer.alloc(0)]));

  const received: Buffer[] = [];
  const waiting: { resolve: (frame: Buffer) => void; reject: (error: Error) => void }[] = [];
  let pending = Buffer.alloc(0);
  /** Null until the status line and headers are in. */
  let status: number | null = null;
  let headers = new Map<string, string>();
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {}); // a reset shows as 'close'; tests look at `closed`

  const takeFrames = (): void => {
    while (pending.length >= 2) {
      const length = pending.readUInt16BE(0);
      if (pending.length < 2 + length) return;
      const frame = Buffer.from(pending.subarray(2, 2 + length));
      pending = pending.subarray(2 + length);
      const waiter = waiting.shift();
      if (waiter === undefined) received.push(frame);
      else waiter.resolve(frame);
    }
  };

  const upgrade = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (status === null) {
        const headerEnd = pending.indexOf('\r\n\r\n');
        if (headerEnd === -1) return;
        const [statusLine = '', ...headerLines] = pending.subarray(0, headerEnd).toString('latin1').split('\r\n');
        status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1] ?? 0);
        headers = new Map(
          headerLines.map((line) => [
            line.slice(0, line.indexOf(':')).toLowerCase(),
            line.slice(line.indexOf(':') + 1).trim(),
          ]),
        );
        pending = pending.subarray(headerEnd + 4);
        if (status === 101) resolve();
      }
      // After a refusal the rest is the body, read once the relay has closed the connection.
      if (status === 101) takeFrames();
    });
    void closed.then(() => {
      if (status === null) reject(new Error('the relay closed the connection without answering'));
      else if (status !== 101) reject(new UpgradeRefused(status, headers, pending.toString('utf8')));
      for (const waiter of waiting.splice(0)) waiter.reject(new Error('the tunnel is closed'));
    });
  });
  await upgrade;

  return {
    socket,
    send: (datagram) => socket.write(uotlvFrame(datagram)),
    next(timeoutMs = 5_000) {
      const frame = received.shift();
      if (frame !== undefined) return Promise.resolve(frame);
      if (socket.destroyed) return Promise.reject(new Error('the tunnel is closed'));
      return new Promise<Buffer>((resolve, reject) => {
        const timer =
          timeoutMs === Infinity
            ? undefined
            : setTimeout(() => {
                waiting.splice(waiting.indexOf(waiter), 1);
                reject(new Error(`no frame within ${timeoutMs} ms`));
              }, timeoutMs);
        const waiter = {
          resolve: (next: Buffer) => {
            clearTimeout(timer);
            resolve(next);
          },
          reject: (error: Error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        waiting.push(waiter);
      });
    },
    closed,
  };
}

export interface UotlvClientRelay {
  /** Where WireGuard sends its datagrams (its `Endpoint`). */
  readonly udpAddress: TcpAddress;
  close(): Promise<void>;
}

/**
 * A minimal ProxyGuard client: datagrams arriving on the local UDP address are framed onto
 * one tunnel to `proxyEndpoint`; datagrams from the tunnel go back to whoever sent last (the
 * WireGuard client). A closed tunnel is opened again on the next datagram.
 */
export async function startUotlvClientRelay(options: {
  readonly listen: TcpAddress;
  readonly proxyEndpoint: string;
  /** PEM of the CA that signed the TLS proxy's certificate. */
  readonly ca?: string;
  readonly connectTo?: TcpAddress;
  readonly log?: (message: string) => void;
}): Promise<UotlvClientRelay> {
  const log = options.log ?? (() => {});
  const udp: UdpSocket = createSocket('udp4');
  udp.on('error', (error) => log(`udp error: ${error.message}`));
  await new Promise<void>((resolve) => udp.bind(options.listen.port, options.listen.host, resolve));

  let peer: RemoteInfo | null = null;
  let tunnel: Promise<UotlvTunnel> | null = null;
  let closing = false;

  const openTunnel = (): Promise<UotlvTunnel> => {
    const opening = openUotlvTunnel(options.proxyEndpoint, {
      ...(options.connectTo === undefined ? {} : { connectTo: options.connectTo }),
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    });
    void opening.then(
      (opened) => {
        log('tunnel open');
        const pump = async (): Promise<void> => {
          for (;;) {
            const datagram = await opened.next(Infinity);
            if (peer !== null) udp.send(datagram, peer.port, peer.address);
          }
        };
        void pump().catch(() => {});
        void opened.closed.then(() => {
          log('tunnel closed');
          if (tunnel === opening) tunnel = null;
        });
      },
      (error: unknown) => {
        log(`tunnel failed: ${(error as Error).message}`);
        if (tunnel === opening) tunnel = null;
      },
    );
    return opening;
  };

  tunnel = openTunnel();
  await tunnel;
  udp.on('message', (datagram, from) => {
    if (closing) return;
    peer = from;
    tunnel ??= openTunnel();
    void tunnel.then((open) => open.send(datagram)).catch(() => {});
  });

  return {
    udpAddress: options.listen,
    async close() {
      closing = true;
      udp.close();
      const open = await tunnel?.catch(() => null);
      open?.socket.destroy();
    },
  };
}
