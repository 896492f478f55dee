// The places for reconcile work on single nodes, shared by the full pass (which goes over every
// node) and the passes for one node (it answers again, lost its peers, refused a change): only a
// few nodes at once, since each holds its node's peer list in the portal's capped heap; never
// two passes on one node at once; and a pass for one node before the full pass's next node, so
// a revocation a node missed while it was away waits for no more than one node's work to end,
// never for a whole pass (nor for the housekeeping, which takes no place at all).
import type { NodeNumber } from '../../shared/ids.js';

/** Who asks for a place: a pass for one node goes before the full pass's next node. */
export type NodeWorkKind = 'node pass' | 'full pass';

interface Waiting {
  readonly nodeNumber: NodeNumber;
  readonly kind: NodeWorkKind;
  readonly enter: () => void;
}

export class NodeSlots {
  readonly #busyNodes = new Set<NodeNumber>();
  /** In the order they asked; the first node pass whose node is free goes first, then the first such full-pass node. */
  readonly #waiting: Waiting[] = [];

  constructor(private readonly places: number) {}

  /** Runs `work` once a place is free and no other work holds this node. */
  async run<T>(nodeNumber: NodeNumber, kind: NodeWorkKind, work: () => Promise<T>): Promise<T> {
    await new Promise<void>((enter) => {
      this.#waiting.push({ nodeNumber, kind, enter });
      this.#admit();
    });
    try {
      return await work();
    } finally {
      this.#busyNodes.delete(nodeNumber);
      this.#admit();
    }
  }

  /** Nodes being worked on now. */
  get busy(): number {
    return this.#busyNodes.size;
  }

  #admit(): void {
    while (this.#busyNodes.size < this.places) {
      const free = (kind: NodeWorkKind) =>
        this.#waiting.findIndex((entry) => entry.kind === kind && !this.#busyNodes.has(entry.nodeNumber));
      const nodePass = free('node pass');
      const index = nodePass === -1 ? free('full pass') : nodePass;
      if (index === -1) return;
      const [next] = this.#waiting.splice(index, 1);
      if (next === undefined) return;
      this.#busyNodes.add(next.nodeNumber);
      next.enter();
    }
  }
}
