// One heap budget for every node listing the portal reads (a WireGuard peer list costs some four
// times its JSON on the heap while it is parsed and converted, 54–64 MB for a full wireguard-go
// node): the reconcile passes (src/core/reconcile/node-slots.ts) and the Admin API's listings of
// the nodes' connections take their weight from it, so that together they stay within a share
// of the capped heap, whoever asks.
import { getHeapStatistics } from 'node:v8';

/**
 * Heap a listing takes at its peak per byte of its JSON: the answer as text, parsed, checked and
 * converted (measured: 64 MB for 65,536 typical peers, 15 MB of JSON; 135 MB for 32 MiB of the
 * shortest entries: about 4.2 either way), and a pass's peers from the database beside it.
 */
const HEAP_PER_LISTED_BYTE = 6;
/** The share of the heap the listings may take together; the rest is the portal's own (requests, caches, pages). */
const LISTINGS_HEAP_SHARE = 0.5;

/**
 * The listing bytes that may be read at once: at the 192 MB cap about 21 MB, so one full
 * wireguard-go node (65,536 peers) at a time, or four nodes of 20,000 peers. One listing is
 * always let in, whatever its weight.
 */
export function listingBudgetBytes(heapLimitBytes = getHeapStatistics().heap_size_limit): number {
  return Math.floor((heapLimitBytes * LISTINGS_HEAP_SHARE) / HEAP_PER_LISTED_BYTE);
}

interface Waiting {
  readonly weight: number;
  readonly enter: () => void;
}

/**
 * Weight held at once stays within `limit`, except that one holder is always let in when there is
 * none. `run` waits in order of asking, and the first waiting keeps its turn (lighter work does
 * not pass it); a taker that orders its own queue (NodeSlots) takes weight with `tryTake` only
 * when nobody waits here, and is told by `onGiven` when weight comes back.
 */
export class ListingBudget {
  #held = 0;
  #holders = 0;
  readonly #waiting: Waiting[] = [];
  readonly #listeners = new Set<() => void>();

  constructor(readonly limit: number) {}

  /** The weight held now. */
  get held(): number {
    return this.#held;
  }

  /** Takes `weight` now if it fits beside what is held (or nothing is held) and no `run` waits. */
  tryTake(weight: number): boolean {
    if (this.#waiting.length > 0 || !this.#fits(weight)) return false;
    this.#take(weight);
    return true;
  }

  /** Gives back weight taken with `tryTake`. */
  give(weight: number): void {
    this.#held -= weight;
    this.#holders -= 1;
    this.#wake();
  }

  /** Called whenever weight is given back (after the waiting `run`s had their turn). */
  onGiven(listener: () => void): void {
    this.#listeners.add(listener);
  }

  /** Runs `work` once its weight fits, holding the weight until it ends. */
  async run<T>(weight: number, work: () => Promise<T>): Promise<T> {
    await new Promise<void>((enter) => {
      this.#waiting.push({ weight, enter });
      this.#wake();
    });
    try {
      return await work();
    } finally {
      this.give(weight);
    }
  }

  #fits(weight: number): boolean {
    return this.#holders === 0 || this.#held + weight <= this.limit;
  }

  #take(weight: number): void {
    this.#held += weight;
    this.#holders += 1;
  }

  #wake(): void {
    for (let next = this.#waiting[0]; next !== undefined && this.#fits(next.weight); next = this.#waiting[0]) {
      this.#waiting.shift();
      this.#take(next.weight);
      next.enter();
    }
    if (this.#waiting.length === 0) for (const listener of this.#listeners) listener();
  }
}
