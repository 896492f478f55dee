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
  readonly ticket: number;
  readonly enter: () => void;
}

/** A taker that orders its own queue (NodeSlots) and shares the budget's order by ticket. */
export interface OrderedTaker {
  /** The ticket of its work that would take weight next, or Infinity when none could run now. */
  readonly nextTicket: () => number;
  /** Called when weight is given back or the order moves: it may try to take now. */
  readonly admit: () => void;
}

/** Tickets for work that goes before every listing: a pass for one node, which carries revocations. */
export const FIRST_TICKET = 0;

/**
 * Weight held at once stays within `limit`, except that one holder is always let in when there is
 * none. Everything waits in one order, by ticket: `run` (a listing) takes one as it asks, and a
 * taker that orders its own queue (NodeSlots) gives each of its works one, or FIRST_TICKET for a
 * pass for one node (revocations a node missed must not wait for listings, however many come).
 * The first in that order keeps its turn: lighter work behind it does not pass it, so a heavy node
 * is not put off for as long as light ones keep coming, nor a pass for as long as listings do.
 */
export class ListingBudget {
  #held = 0;
  #holders = 0;
  #tickets = FIRST_TICKET;
  readonly #waiting: Waiting[] = [];
  readonly #takers = new Set<OrderedTaker>();

  constructor(readonly limit: number) {}

  /** The weight held now. */
  get held(): number {
    return this.#held;
  }

  /** A place in the order, after every one given before. */
  ticket(): number {
    this.#tickets += 1;
    return this.#tickets;
  }

  /** Takes `weight` now if it fits beside what is held (or nothing is held) and no listing holding an earlier ticket waits. */
  tryTake(weight: number, ticket: number): boolean {
    const first = this.#waiting[0];
    if ((first !== undefined && first.ticket < ticket) || !this.#fits(weight)) return false;
    this.#take(weight);
    return true;
  }

  /** Gives back weight taken with `tryTake`. */
  give(weight: number): void {
    this.#held -= weight;
    this.#holders -= 1;
    this.#wake();
  }

  /** Shares the budget's order with a taker that orders its own queue. */
  shareWith(taker: OrderedTaker): void {
    this.#takers.add(taker);
  }

  /** Runs `work` once its weight fits and its turn has come, holding the weight until it ends. */
  async run<T>(weight: number, work: () => Promise<T>): Promise<T> {
    const ticket = this.ticket();
    await new Promise<void>((enter) => {
      this.#waiting.push({ weight, ticket, enter });
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
    for (let next = this.#waiting[0]; next !== undefined; next = this.#waiting[0]) {
      if (!this.#fits(next.weight) || this.#takerBefore(next.ticket)) break;
      this.#waiting.shift();
      this.#take(next.weight);
      next.enter();
    }
    for (const taker of this.#takers) taker.admit();
  }

  #takerBefore(ticket: number): boolean {
    for (const taker of this.#takers) if (taker.nextTicket() < ticket) return true;
    return false;
  }
}
