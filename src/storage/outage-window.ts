// How long a call rides out a lost database connection: each outage gets `databaseRetryFor` of
// its own, counted from the loss, never from the call's start, shared by the events seam (a
// change run again) and the PostgreSQL driver (a read asked again, a connection asked for again).
// Measured on the monotonic clock: a step of the wall clock must neither end a window at once nor
// keep a call waiting for hours.
import { elapsedSince, monotonicNow, type MonotonicMs } from '../shared/monotonic.js';

/** Outages a call rides out before it answers 503. */
const OUTAGES_PER_CALL = 3;
/** Connections closed for a stale statement a call goes past: as many as the largest pool holds. */
const STALE_CONNECTIONS_PER_CALL = 100;

/**
 * The outage a call rides out, as long as it lasts no longer than `databaseRetryFor`. The window
 * opens at the first lost connection, not at the call: a call that waited behind a backlog still
 * gets it whole. A connection lost after the server answered again (a second restart a few
 * seconds after the first) opens a new window, up to OUTAGES_PER_CALL: a server that ends every
 * session it gives cannot keep a call for good.
 */
export class OutageWindow {
  #since: MonotonicMs | null = null;
  #outages = 0;
  #staleConnections = 0;

  constructor(private readonly lengthMs: number) {}

  /** A connection was lost; true when this opens a new window. */
  lost(serverAnsweredSince: boolean): boolean {
    if (this.#since !== null && !serverAnsweredSince) return false;
    this.#since = monotonicNow();
    this.#outages += 1;
    return true;
  }

  /** The server answered: a later loss opens a new window. */
  ended(): void {
    this.#since = null;
  }

  /**
   * A connection was closed for a statement a migration made stale (after one, each pooled
   * connection may be): the server answered, so no outage is under way and a later loss opens a
   * window of its own. False once the call met more than any pool holds, and always with a
   * window of 0 (`databaseRetryFor: PT0S`: nothing is tried again).
   */
  staleConnection(): boolean {
    this.ended();
    this.#staleConnections += 1;
    return this.lengthMs > 0 && this.#staleConnections <= STALE_CONNECTIONS_PER_CALL;
  }

  /** When the current window opened (now, when none is open). */
  get since(): MonotonicMs {
    return this.#since ?? monotonicNow();
  }

  /** Whether the call may try again after a pause of `pauseMs`, still within its window. */
  allows(pauseMs: number): boolean {
    return this.allowsAnother() && elapsedSince(this.since) + pauseMs <= this.lengthMs;
  }

  /** Whether a later loss may still open a window of its own. */
  allowsAnother(): boolean {
    return this.#outages <= OUTAGES_PER_CALL;
  }
}
