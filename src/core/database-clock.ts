// The portal's clock, never behind the PostgreSQL server's. Every instance judges expiry by its
// own clock, so an instance whose clock is behind would still count an expired configuration as
// valid and put it back on the nodes by a reconcile pass until the sweep deletes it: a
// revocation undone. Sampled at start and every minute, an instance more than a second behind the
// server takes the server's time; one ahead keeps its own (it only ends things early). Either is
// logged once, while it lasts, so the administrator fixes the host's time (NTP).
import type { Logger } from 'pino';
import type { Clock } from '../shared/time.js';
import type { Db } from '../storage/database.js';
import { databaseServerTime } from '../storage/server-time.js';

/** A difference up to this much is the measurement's own noise (and NTP's), not a wrong clock. */
const TOLERANCE_MS = 1_000;
/** A sample whose round trip took longer says too little about the offset. */
const MAX_ROUND_TRIP_MS = 1_000;
/** How often the server's time is read again. */
export const DATABASE_CLOCK_SAMPLE_MS = 60_000;

export class DatabaseClock implements Clock {
  readonly #local: Clock;
  readonly #db: Db;
  readonly #logger: Logger;
  /** How far the local clock is behind the server's, when beyond the tolerance; else 0. */
  #behindMs = 0;
  /** What was last logged of the offset: 'behind', 'ahead' or 'agrees'. */
  #said: 'behind' | 'ahead' | 'agrees' = 'agrees';

  constructor(local: Clock, db: Db, logger: Logger) {
    this.#local = local;
    this.#db = db;
    this.#logger = logger;
  }

  now(): Date {
    const local = this.#local.now();
    return this.#behindMs === 0 ? local : new Date(local.getTime() + this.#behindMs);
  }

  /** How far this instance's clock is behind the server's (taken into account); 0 when not. */
  behindMs(): number {
    return this.#behindMs;
  }

  /** Reads the server's time and sets the offset; a failed read keeps the last one. */
  async sample(): Promise<void> {
    let server: Date | null;
    const sent = this.#local.now().getTime();
    try {
      server = await databaseServerTime(this.#db);
    } catch (error) {
      this.#logger.warn({ err: error }, 'the database server’s time cannot be read; the clock keeps its offset');
      return;
    }
    const received = this.#local.now().getTime();
    if (server === null || received - sent > MAX_ROUND_TRIP_MS) return;
    const offset = server.getTime() - (sent + received) / 2;
    this.#behindMs = offset > TOLERANCE_MS ? Math.round(offset) : 0;
    const state = offset > TOLERANCE_MS ? 'behind' : offset < -TOLERANCE_MS ? 'ahead' : 'agrees';
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
        `this host's clock is ${seconds} s ahead of the database server's; configurations expire that much early here (fix the host's time, e.g. NTP)`,
      );
    else this.#logger.info("this host's clock agrees with the database server's again");
  }
}
