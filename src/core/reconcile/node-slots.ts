// The places for reconcile work on single nodes, shared by the full pass (which goes over every
// node) and the passes for one node (it answers again, lost its peers, refused a change): only a
// few nodes at once, and only as many as their peer lists fit in the portal's capped heap
// together (each work comes with its weight, the bytes its node's listing is expected to take;
// the weights admitted at once stay within a budget, except that one work is always admitted,
// whatever its weight); never two passes on one node at once; and a pass for one node before the
// full pass's next node, so a revocation a node missed while it was away waits for no more than
// one node's work to end, never for a whole pass (nor for the housekeeping, which takes no place
// at all). The budget may be shared with other readers of node listings (the Admin API's
// connection listings: src/node-client/listing-budget.ts).
import type { NodeNumber } from '../../shared/ids.js';
import { FIRST_TICKET, ListingBudget } from '../../node-client/listing-budget.js';

/** Who asks for a place: a pass for one node goes before the full pass's next node. */
export type NodeWorkKind = 'node pass' | 'full pass';

interface Waiting {
  readonly nodeNumber: NodeNumber;
  readonly kind: NodeWorkKind;
  readonly weight: number;
  /** Its place in the budget's order: FIRST_TICKET for a node pass, before every listing. */
  readonly ticket: number;
  readonly enter: () => void;
}

export class NodeSlots {
  readonly #busyNodes = new Map<NodeNumber, number>();
  /** In the order they asked; the first node pass whose node is free goes first, then the first such full-pass node. */
  readonly #waiting: Waiting[] = [];

  readonly #budget: ListingBudget;

  /**
   * `places`: nodes at once at most; `budget`: the most weight at once (Infinity: no limit but
   * the places), or a budget shared with other work.
   */
  constructor(
    private readonly places: number,
    budget: number | ListingBudget = Number.POSITIVE_INFINITY,
  ) {
    this.#budget = budget instanceof ListingBudget ? budget : new ListingBudget(budget);
    this.#budget.shareWith({
      nextTicket: () => this.#next()?.ticket ?? Number.POSITIVE_INFINITY,
      admit: () => this.#admit(),
    });
  }

  /** Runs `work` once a place and its weight are free and no other work holds this node. */
  async run<T>(nodeNumber: NodeNumber, kind: NodeWorkKind, work: () => Promise<T>, weight = 0): Promise<T> {
    await new Promise<void>((enter) => {
      const ticket = kind === 'node pass' ? FIRST_TICKET : this.#budget.ticket();
      this.#waiting.push({ nodeNumber, kind, weight, ticket, enter });
      this.#admit();
    });
    try {
      return await work();
    } finally {
      const weight = this.#busyNodes.get(nodeNumber) ?? 0;
      this.#busyNodes.delete(nodeNumber);
      this.#budget.give(weight);
      this.#admit();
    }
  }

  /** Nodes being worked on now. */
  get busy(): number {
    return this.#busyNodes.size;
  }

  /** The weight of the work under way (with a shared budget: of all its holders). */
  get weight(): number {
    return this.#budget.held;
  }

  /**
   * Admits in order: the first waiting work whose node is free (node passes first) enters when
   * its weight fits beside the work under way, or when nothing is under way (with a shared
   * budget: beside every holder's, and after the listings that asked before it; a node pass goes
   * before every listing, src/node-client/listing-budget.ts). One that does not
   * fit waits for weight to be given back, and keeps its turn: lighter work behind it does not
   * pass it, so a heavy node is not put off for as long as light ones keep coming.
   */
  #admit(): void {
    for (let next = this.#next(); next !== undefined; next = this.#next()) {
      if (!this.#budget.tryTake(next.weight, next.ticket)) return;
      this.#waiting.splice(this.#waiting.indexOf(next), 1);
      this.#busyNodes.set(next.nodeNumber, next.weight);
      next.enter();
    }
  }

  /** The work that would enter next (a node pass first), if a place is free for it. */
  #next(): Waiting | undefined {
    if (this.#busyNodes.size >= this.places) return undefined;
    const free = (kind: NodeWorkKind) =>
      this.#waiting.find((entry) => entry.kind === kind && !this.#busyNodes.has(entry.nodeNumber));
    return free('node pass') ?? free('full pass');
  }
}
