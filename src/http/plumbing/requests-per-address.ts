// How many requests a source address may send to a public endpoint (enrollment) per minute, so
// nobody can guess tokens or flood the database from one place. A fixed one-minute window
// shared by all addresses: the counters are dropped together at its end, so memory stays
// bounded by the addresses seen in one minute. An IPv6 client counts by its /64, as one
// host may use any address of its /64. Per portal instance: with several instances behind a
// load balancer each counts on its own (the limit is then per instance).
import { parseIpAddress } from '../../net/ip-prefix.js';

const WINDOW_MS = 60_000;
const IPV6_HOST_BITS = 64n;

export class RequestsPerAddress {
  readonly #counts = new Map<string, number>();
  #windowStart = 0;

  constructor(
    private readonly maxPerMinute: number,
    private readonly now: () => number,
  ) {}

  /** Counts a request; null when it may go on, else the seconds until the address may send again. */
  take(address: string): number | null {
    const now = this.now();
    if (now - this.#windowStart >= WINDOW_MS) {
      this.#counts.clear();
      this.#windowStart = now;
    }
    const key = clientOf(address);
    const count = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.set(key, count);
    if (count <= this.maxPerMinute) return null;
    return Math.max(1, Math.ceil((this.#windowStart + WINDOW_MS - now) / 1000));
  }
}

/** The client an address stands for: an IPv4 address (also IPv4-mapped), or an IPv6 /64. */
function clientOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  try {
    const parsed = parseIpAddress(mapped?.[1] ?? address);
    return parsed.family === 4 ? `4:${parsed.value}` : `6:${parsed.value >> IPV6_HOST_BITS}`;
  } catch {
    return address;
  }
}
