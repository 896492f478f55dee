// Failed console sign-ins counted per client, so nobody guesses admin keys or the Admin API
// secret from one place: after `maxFailures` refused credentials from one client within
// `windowMs` of its first, every further sign-in from it is refused (429) until that window has
// passed. A sign-in that succeeds is not counted. A client is an IPv4 address or an IPv6 /64
// (clientOf), taken from the address the portal derives for the request (X-Forwarded-For only
// from `adminApi.trustedProxyList`). In memory, per portal instance: several instances each
// count on their own, and a restart forgets. At most `maxClients` are kept; beyond that the one
// whose window began first is dropped. Time on the monotonic clock, as a wall clock stepped back
// would keep a client refused for as long.
import { monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';
import { clientOf } from '../plumbing/requests-per-address.js';

export interface SignInThrottleOptions {
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly maxClients: number;
  /** The monotonic clock; tests move it. */
  readonly now?: () => MonotonicMs;
}

/** The console's defaults: 10 failures in 15 minutes, for up to 10,000 clients (about a megabyte). */
export const SIGN_IN_THROTTLE: SignInThrottleOptions = { maxFailures: 10, windowMs: 15 * 60_000, maxClients: 10_000 };

interface Failures {
  readonly since: MonotonicMs;
  count: number;
}

export class SignInThrottle {
  /** In the order each client's window began: the first is the oldest. */
  readonly #clients = new Map<string, Failures>();
  readonly #now: () => MonotonicMs;

  constructor(private readonly options: SignInThrottleOptions) {
    this.#now = options.now ?? monotonicNow;
  }

  /**
   * A sign-in from `address` begins: null when it may go on, counted as a failure until it
   * succeeds (so sign-ins sent all at once are counted before any is checked); else the seconds
   * until the address may try again, and it is not counted.
   */
  attempt(address: string): number | null {
    const key = clientOf(address);
    const failures = this.#current(key);
    if (failures !== undefined) {
      if (failures.count >= this.options.maxFailures)
        return Math.max(1, Math.ceil((failures.since + this.options.windowMs - this.#now()) / 1000));
      failures.count++;
      return null;
    }
    while (this.#clients.size >= this.options.maxClients) {
      const oldest = this.#clients.keys().next().value;
      if (oldest === undefined) break;
      this.#clients.delete(oldest);
    }
    this.#clients.set(key, { since: this.#now(), count: 1 });
    return null;
  }

  /** The sign-in `attempt` let go on succeeded: it is not a failure. */
  succeeded(address: string): void {
    const key = clientOf(address);
    const failures = this.#current(key);
    if (failures === undefined) return;
    failures.count--;
    if (failures.count <= 0) this.#clients.delete(key);
  }

  /** Whether `address` has used up its failures for now. */
  exhausted(address: string): boolean {
    const failures = this.#current(clientOf(address));
    return failures !== undefined && failures.count >= this.options.maxFailures;
  }

  /** How many clients are kept now. */
  get size(): number {
    return this.#clients.size;
  }

  /** A client's failures in its window now; one whose window passed is forgotten. */
  #current(key: string): Failures | undefined {
    const failures = this.#clients.get(key);
    if (failures === undefined || this.#now() - failures.since < this.options.windowMs) return failures;
    this.#clients.delete(key);
    return undefined;
  }
}
