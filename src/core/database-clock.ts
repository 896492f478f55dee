// The portal's clock, never behind the PostgreSQL server's. Every instance judges expiry by its
// own clock, so an instance whose clock is behind would still count an expired configuration as
// valid and put it back on the nodes by a reconcile pass until the sweep deletes it: a
// revocation undone. Sampled at start and every minute, an instance more than a second behind
// the server takes the server's time, carried forward by the monotonic clock from the sample (so
// when NTP steps the host's clock right, nothing runs ahead until the next sample). One ahead
// keeps its own (it ends things early and dates expiries late: fix it). Either is logged once
// while it lasts, so the administrator fixes the host's time (NTP).
import type { Logger } from 'pino';
import type { Clock } from '../shared/time.js';
import type { Db } from '../storage/database.js';
import { databaseServerTime } from '../storage/server-time.js';

/** A difference up to this much is the measurement's own noise (and NTP's), not a wrong clock. */
const TOLERANCE_MS = 1_000;
/** The log says the clocks agree again only below this: no message each minute for a clock near the tolerance. */
const AGREES_AGAIN_MS = 500;
/** A sample whose round trip took longer says too little about the offset. */
const MAX_ROUND_TRIP_MS = 1_000;
/** How often the server's time is read again. */
export const DATABASE_CLOCK_SAMPLE_MS = 60_000;

/** The server's time at a moment of the monotonic clock. */
interface ServerSample {
  readonly serverMs: number;
  readonly monotonicMs: number;
}

export class DatabaseClock implements Clock {
  readonly #local: Clock;
  readonly #db: Db;
  readonly #logger: Logger;
  readonly #monotonicMs: () => number;
  #sample: ServerSample | null = null;
  /** What was last logged of the offset. */
  #said: 'behind' | 'ahead' | 'agrees' = 'agrees';

  constructor(local: Clock, db: Db, logger: Logger, monotonicMs: () => number = () => performance.now()) {
    this.#local = local;
    this.#db = db;
    this.#logger = logger;
    this.#monotonicMs = monotonicMs;
  }

  now(): Date {
    const local = this.#local.now();
    const behind = this.#behindOf(local);
    return behind === 0 ? local : new Date(local.getTime() + behind);
  }

  /** How far this instance's clock is behind the server's now, when beyond the tolerance (taken into account); else 0. */
  behindMs(): number {
    return Math.round(this.#behindOf(this.#local.now()));
  }

  /** Reads the server's time; a failed or slow read keeps the last sample. */
  async sample(): Promise<void> {
    let server: Date | null;
    const sentLocal = this.#local.now().getTime();
    const sent = this.#monotonicMs();
    try {
      server = await databaseServerTime(this.#db);
    } catch (error) {
      this.#logger.warn({ err: error }, 'the database server’s time cannot be read; the clock keeps its last reading');
      return;
    }
    const received = this.#monotonicMs();
    if (server === null || received - sent > MAX_ROUND_TRIP_MS) return;
    const midpoint = (sent + received) / 2;
    this.#sample = { serverMs: server.getTime(), monotonicMs: midpoint };
    this.#tell(server.getTime() - (sentLocal + (midpoint - sent)));
  }

  /** How far `local` is behind the server's time carried from the last sample, beyond the tolerance; else 0. */
  #behindOf(local: Date): number {
    if (this.#sample === null) return 0;
    const behind = this.#sample.serverMs + (this.#monotonicMs() - this.#sample.monotonicMs) - local.getTime();
    return behind > TOLERANCE_MS ? behind : 0;
  }

  /** Logs the offset when it crosses the tolerance, and again only when it is well within it. */
  #tell(offset: number): void {
    const state =
      offset > TOLERANCE_MS
        ? 'behind'
        : offset < -TOLERANCE_MS
          ? 'ahead'
          : Math.abs(offset) < AGREES_AGAIN_MS
            ? 'agrees'
            : this.#said;
    if (state === this.#said) return;
    this.#said = state;
    const seconds = Math.abs(offset / 1000).toFixed(1);
    if (state === 'behind')
      this.#logger.warn(
        { offsetMs: Math.round(offset) },
        `this host's clock is ${seconds} s behind the database server's; the portal takes the server's time (fix the host's time, e.g. NTP)`,
      );
    else if (state === 'ahead')
      this.#logger.warn(
        { offsetMs: Math.round(offset) },
        `this host's clock is ${seconds} s ahead of the database server's; configurations expire early here and are dated to expire late (fix the host's time, e.g. NTP)`,
      );
    else this.#logger.info("this host's clock agrees with the database server's again");
  }
}
