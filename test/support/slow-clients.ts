// An attacker's slow connections for the tests, on raw sockets: each sends the start of a
// request, then one byte at a time, never finishing; one that the server closes is opened
// again after a pause, so the pressure lasts as long as the test. Opened in batches, as
// thousands of simultaneous SYNs would overflow the listen queue and measure the kernel instead.
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface SlowClientOptions {
  readonly host: string;
  readonly port: number;
  /** Source address, e.g. 127.0.0.2 to be another host than the legitimate clients on 127.0.0.1. */
  readonly localAddress?: string;
  readonly count: number;
  /** What connection `index` sends at once: the start of a request that never ends. */
  readonly opening: (index: number) => string;
  /** One more byte every this many milliseconds. */
  readonly dripIntervalMs: number;
  /** A connection the server closed is opened again after this pause. */
  readonly reconnectDelayMs: number;
}

export interface SlowClients {
  /** Resolves once every connection has been attempted once. */
  readonly started: Promise<void>;
  /** Connections that have been open for at least `ms` now. */
  openLongerThan(ms: number): number;
  /** Connections the server has closed so far. */
  closedByServer(): number;
  stop(): void;
}

const BATCH = 100;
const BATCH_PAUSE_MS = 20;

export function startSlowClients(options: SlowClientOptions): SlowClients {
  const open = new Map<Socket, number>();
  let closed = 0;
  let stopped = false;

  const openOne = (index: number): void => {
    if (stopped) return;
    const socket = connect({
      host: options.host,
      port: options.port,
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
    });
    socket.on('error', () => {}); // a refused or reset connection shows as 'close'
    socket.on('data', () => {}); // whatever the server answers is read and ignored
    socket.once('connect', () => {
      open.set(socket, performance.now());
      socket.write(options.opening(index));
    });
    socket.once('close', () => {
      if (open.delete(socket)) closed += 1;
      if (!stopped) setTimeout(() => openOne(index), options.reconnectDelayMs).unref();
    });
  };

  const drip = setInterval(() => {
    for (const socket of open.keys()) if (socket.writable) socket.write('a');
  }, options.dripIntervalMs);

  const started = (async () => {
    for (let first = 0; first < options.count && !stopped; first += BATCH) {
      for (let index = first; index < Math.min(first + BATCH, options.count); index++) openOne(index);
      await sleep(BATCH_PAUSE_MS);
    }
  })();

  return {
    started,
    openLongerThan(ms) {
      const before = performance.now() - ms;
      let count = 0;
      for (const since of open.values()) if (since <= before) count += 1;
      return count;
    },
    closedByServer: () => closed,
    stop() {
      stopped = true;
      clearInterval(drip);
      for (const socket of open.keys()) socket.destroy();
      open.clear();
    },
  };
}

/** The 99th percentile of `samples` (nearest rank). */
export function percentile99(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? Number.NaN;
}

/**
 * Runs `jobs` with at most `concurrency` in flight, and returns each one's result and duration.
 * `pauseMs`: each worker waits that long after a job (not counted), to spread the jobs over time.
 */
export async function timedInParallel<T>(
  jobs: readonly (() => Promise<T>)[],
  concurrency: number,
  pauseMs = 0,
): Promise<{ result: T; ms: number }[]> {
  const results: { result: T; ms: number }[] = new Array(jobs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const index = next++;
      const job = jobs[index] as () => Promise<T>;
      const started = performance.now();
      const result = await job();
      results[index] = { result, ms: performance.now() - started };
      if (pauseMs > 0) await sleep(pauseMs);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}
