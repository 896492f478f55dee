// TCP proxies on 127.0.0.1 for failures that only the network between two processes can
// cause at the exact moment a test needs: a PostgreSQL connection cut right at a transaction's
// COMMIT or at a statement that is its own transaction (before or after the server got it), a
// COMMIT or its answer withheld with the connection left open, a node's answer held back while the test
// does something else (restarts the database), and a node cut off and back again while its
// interface keeps its peers. Everything else passes through unchanged.
import net from 'node:net';

export interface PostgresCutter {
  /** postgres://… of the proxy, with the target's user, password and database. */
  readonly url: string;
  /**
   * Cuts the next COMMIT sent on a connection whose transaction ran a statement containing
   * `marker`: `after-forwarding` hands the COMMIT to the server and then drops the portal's
   * side at once (the server commits; the portal never hears it), `instead-of-forwarding`
   * drops the connection with the COMMIT unsent (the server rolls back). Resolves once cut.
   * Or the connection stays open, silent, until the portal gives up on it and closes it (then
   * the proxy closes the server's side), whatever the server does meanwhile (it ends a
   * transaction left idle for databaseTimeout): `answer-withheld` hands the COMMIT to the server and
   * never passes its answer on (the server commits), `withheld` never sends the COMMIT (the
   * server rolls back once the connection closes).
   */
  cutNextCommit(marker: string, mode: CommitCut): Promise<void>;
  /**
   * Cuts the next statement containing `marker` that is its own transaction (sent by the
   * extended protocol, its text in the Parse message: an unnamed statement): `after-forwarding`
   * hands it and its Sync to the server, holds back the answer and drops the portal's side once
   * the server is ready again (it committed), `instead-of-forwarding` drops the connection with
   * it unsent, `answer-withheld` hands it to the server and leaves the connection open and
   * silent until the portal closes it. Resolves once cut.
   */
  cutNextStatement(
    marker: string,
    mode: 'after-forwarding' | 'instead-of-forwarding' | 'answer-withheld',
  ): Promise<void>;
  close(): Promise<void>;
}

export type CommitCut = 'after-forwarding' | 'instead-of-forwarding' | 'answer-withheld' | 'withheld';

interface CutRequest {
  readonly marker: Buffer;
  /** At the COMMIT after a statement with the marker, or at the statement itself (its Sync). */
  readonly at: 'commit' | 'statement';
  readonly mode: CommitCut;
  readonly done: () => void;
}

const COMMIT = Buffer.from('commit\0');
/** The server's ReadyForQuery message ('Z', length 5), ahead of its transaction status byte. */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

/**
 * Tracks a client and its upstream connection in `sockets` while they live; an error on either
 * ends both, but one on the upstream side leaves the client open while `keepsClient()` says so.
 * Returns what ends both.
 */
function joinPair(
  client: net.Socket,
  upstream: net.Socket,
  sockets: Set<net.Socket>,
  keepsClient: () => boolean = () => false,
): () => void {
  sockets.add(client);
  sockets.add(upstream);
  const closeBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', closeBoth);
  upstream.on('error', () => (keepsClient() ? upstream.destroy() : closeBoth()));
  client.on('close', () => sockets.delete(client));
  upstream.on('close', () => sockets.delete(upstream));
  return closeBoth;
}

/** A proxy that parses the frontend's messages (startup, then type byte + length) to find the COMMIT. */
export async function startPostgresCutter(targetUrl: string): Promise<PostgresCutter> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  let pending: CutRequest | null = null;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    // A COMMIT or its answer withheld: nothing passes either way until the portal closes its side,
    // not even the server's end of the session. The server ends a transaction left idle for
    // databaseTimeout (idle_in_transaction_session_timeout) from its last answer, a moment before
    // the portal stops waiting for the COMMIT it sent after that answer: passed on, that end would
    // tell the portal, whenever it comes first, that the connection broke before the COMMIT
    // reached the server, and the change would run again, instead of getting no answer in time.
    let silent = false;
    const closeBoth = joinPair(client, upstream, sockets, () => silent);
    // A statement cut after forwarding: the server's answer is held back, and the portal's side
    // dropped once the server said it is ready again (its ReadyForQuery: the statement committed).
    let answerHeld = false;
    client.on('close', () => {
      if (silent) upstream.end();
    });
    upstream.on('data', (chunk: Buffer) => {
      if (silent) return;
      if (answerHeld) {
        if (chunk.includes(READY_FOR_QUERY)) {
          client.destroy();
          setTimeout(() => upstream.destroy(), 2000).unref();
        }
        return;
      }
      if (!client.destroyed) client.write(chunk);
    });
    upstream.on('end', () => {
      if (!silent) client.end();
    });
    let buffered = Buffer.alloc(0);
    let startup = true;
    let marked = false;
    client.on('data', (chunk: Buffer) => {
      if (silent) return;
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const headerLength = startup ? 0 : 1;
        if (buffered.length < headerLength + 4) return;
        const length = buffered.readInt32BE(headerLength);
        if (buffered.length < headerLength + length) return;
        const message = buffered.subarray(0, headerLength + length);
        buffered = buffered.subarray(headerLength + length);
        const type = startup ? null : String.fromCharCode(message[0] ?? 0);
        startup = false;
        const cut = pending;
        if (cut?.at === 'statement' && type === 'P' && message.includes(cut.marker)) {
          if (cut.mode === 'instead-of-forwarding') {
            pending = null;
            closeBoth();
            cut.done();
            return;
          }
          marked = true;
        }
        if (cut?.at === 'statement' && type === 'S' && marked) {
          pending = null;
          if (cut.mode === 'answer-withheld') silent = true;
          else answerHeld = true;
          upstream.write(message);
          cut.done();
          return;
        }
        if (cut?.at === 'commit' && type === 'Q' && message.subarray(5).equals(COMMIT) && marked) {
          pending = null;
          if (cut.mode === 'answer-withheld' || cut.mode === 'withheld') {
            silent = true;
            if (cut.mode === 'answer-withheld') upstream.write(message);
          } else if (cut.mode === 'after-forwarding') {
            upstream.write(message);
            // The server keeps the session until it reads the end: it commits, answers nobody.
            client.destroy();
            setTimeout(() => upstream.destroy(), 2000).unref();
          } else {
            closeBoth();
          }
          cut.done();
          return;
        }
        if (cut?.at === 'commit' && message.includes(cut.marker)) marked = true;
        if (type === 'Q' && (message.subarray(5).equals(COMMIT) || message.includes(Buffer.from('rollback'))))
          marked = false;
        upstream.write(message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  const url = new URL(targetUrl);
  url.port = String(address.port);
  return {
    url: url.href,
    cutNextCommit: (marker, mode) =>
      new Promise<void>((resolve) => {
        pending = { marker: Buffer.from(marker), at: 'commit', mode, done: resolve };
      }),
    cutNextStatement: (marker, mode) =>
      new Promise<void>((resolve) => {
        pending = { marker: Buffer.from(marker), at: 'statement', mode, done: resolve };
      }),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface HoldingProxy {
  /** http://127.0.0.1:PORT of the proxy. */
  readonly url: string;
  /** Holds the next request that contains `text` (and everything after it on that connection); resolves once one is held. */
  holdNext(text: string): Promise<void>;
  /** Sends on what was held. */
  release(): void;
  /** Where it forwards to: 127.0.0.1:`port` (set before the first connection). */
  forwardTo(port: number): void;
  close(): Promise<void>;
}

/** A proxy to 127.0.0.1 (at the port `forwardTo` sets) that can hold a request back until the test lets it go. */
export async function startHoldingProxy(): Promise<HoldingProxy> {
  let port = 0;
  const sockets = new Set<net.Socket>();
  let wanted: { readonly text: string; readonly held: () => void } | null = null;
  let releases: (() => void)[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    joinPair(client, upstream, sockets);
    upstream.pipe(client);
    let holding: Buffer[] | null = null;
    client.on('data', (chunk: Buffer) => {
      if (holding !== null) {
        holding.push(chunk);
        return;
      }
      const want = wanted;
      if (want !== null && chunk.includes(want.text)) {
        wanted = null;
        holding = [chunk];
        releases.push(() => {
          for (const held of holding ?? []) upstream.write(held);
          holding = null;
        });
        want.held();
        return;
      }
      upstream.write(chunk);
    });
    client.on('end', () => upstream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    holdNext: (text) =>
      new Promise<void>((resolve) => {
        wanted = { text, held: resolve };
      }),
    forwardTo(target) {
      port = target;
    },
    release() {
      const pendingReleases = releases;
      releases = [];
      for (const release of pendingReleases) release();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface CuttableProxy {
  /** http://127.0.0.1:PORT of the proxy. */
  readonly url: string;
  /** Where it forwards to: 127.0.0.1:`port` (set before the first connection). */
  forwardTo(port: number): void;
  /** Closes every connection, and each new one as it opens: the node behind it cannot be reached. */
  cut(): void;
  /** Passes connections on again. */
  restore(): void;
  close(): Promise<void>;
}

/** A proxy to 127.0.0.1 (at the port `forwardTo` sets) that the test cuts and restores, as a node's network. */
export async function startCuttableProxy(): Promise<CuttableProxy> {
  let port = 0;
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, '127.0.0.1');
    joinPair(client, upstream, sockets);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    forwardTo(target) {
      port = target;
    },
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      cut = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
