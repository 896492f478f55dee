// How many requests a source address may send to a public endpoint (enrollment) per minute, so
// nobody can guess tokens or flood the database from one place. A fixed one-minute window
// shared by all addresses: the counters are dropped together at its end, so memory stays
// bounded by the addresses seen in one minute. An IPv6 client counts by its /64, as one
// host may use any address of its /64. Per portal instance: with several instances behind a
// load balancer each counts on its own (the limit is then per instance). The minute is measured
// on the monotonic clock: on the wall clock, set back an hour, it would last an hour and keep an
// address that reached the limit refused all that time.
import { parseIpAddress } from '../../net/ip-prefix.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';

const WINDOW_MS = 60_000;
const IPV6_HOST_BITS = 64n;

export class RequestsPerAddress {
  readonly #counts = new Map<string, number>();
  #windowStart: MonotonicMs | null = null;

  constructor(private readonly maxPerMinute: number) {}

  /** Counts a request; null when it may go on, else the seconds until the address may send again. */
  take(address: string): number | null {
    if (this.#windowStart === null || elapsedSince(this.#windowStart) >= WINDOW_MS) {
      this.#counts.clear();
      this.#windowStart = monotonicNow();
    }
    const key = clientOf(address);
    const count = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.set(key, count);
    if (count <= this.maxPerMinute) return null;
    return Math.max(1, Math.ceil((WINDOW_MS - elapsedSince(this.#windowStart)) / 1000));
  }
}

/** The client an address stands for: an IPv4 address (also IPv4-mapped), or an IPv6 /64. */
export function clientOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  try {
    const parsed = parseIpAddress(mapped?.[1] ?? address);
    return parsed.family === 4 ? `4:${parsed.value}` : `6:${parsed.value >> IPV6_HOST_BITS}`;
  } catch {
    return address;
  }
}
