// Which add_peer and remove_peer instructions still count. The portal numbers every change to
// whether a peer belongs on this node (its `revision`, from one counter in its database); an
// instruction older than the last one applied for the same key comes from a state that has
// been overtaken — typically an add a reconcile pass read just before an administrator
// disabled the user — and is ignored, so a revocation can never be undone by a late add.
// Removed keys are remembered for REMOVAL_MEMORY_MS, longer than any instruction can be under
// way (the portal sends no add it read more than half of that before), and across restarts
// (removal-file.ts): an add held up in a stalled portal must not find a restarted agent that
// forgot the removal. The service measures the memory in time awake (src/shared/awake-clock.ts):
// an agent that stood still must not wake up having forgotten.
// Instructions without a revision (an older portal, a script) always apply and reset what is
// known about their key.
import { REMOVAL_MEMORY_MS } from '../../protocol/vpn-daemon.js';

/** Forgotten removals are cleared at most this often. */
const PRUNE_EVERY_MS = 60_000;

interface KnownKey {
  readonly revision: number;
  /** Set for a removal: when it was applied (for forgetting it later). */
  readonly removedAtMs: number | null;
}

export type PeerInstruction = 'add' | 'remove';

/** A removal still remembered: its key, its revision, and how long ago it was applied. */
export interface RememberedRemoval {
  readonly publicKey: string;
  readonly revision: number;
  readonly agoMs: number;
}

export class PeerRevisions {
  readonly #known = new Map<string, KnownKey>();
  /** How many of #known are removals. */
  #removalCount = 0;
  readonly #nowMs: () => number;
  #highest = 0;
  #lastPruneMs: number;

  constructor(nowMs: () => number = () => performance.now()) {
    this.#nowMs = nowMs;
    this.#lastPruneMs = nowMs();
  }

  /**
   * The highest revision ever admitted: reported in `/i/node`, so a portal whose database is
   * behind it (a restored backup, another database) moves its counter past it first.
   */
  get highest(): number {
    return this.#highest;
  }

  /** Whether the instruction applies; when it does, it becomes the newest known for its key. */
  admit(publicKey: string, kind: PeerInstruction, revision: number | null): boolean {
    const now = this.#nowMs();
    this.#prune(now);
    const known = this.#known.get(publicKey);
    if (revision === null) {
      this.#forget(publicKey, known);
      return true;
    }
    // Equal revisions: the later arrival wins (a peer the portal no longer serves on this node
    // is removed under the revision it was added with, and added back under it after a fix).
    if (known !== undefined && revision < known.revision) return false;
    this.#forget(publicKey, known);
    this.#set(publicKey, { revision, removedAtMs: kind === 'remove' ? now : null });
    this.#highest = Math.max(this.#highest, revision);
    return true;
  }

  /** How many removals are remembered now (without listing them). */
  get removalCount(): number {
    return this.#removalCount;
  }

  /** The removals remembered now (what a restart must not forget). */
  removals(): RememberedRemoval[] {
    const now = this.#nowMs();
    this.#prune(now);
    const removals: RememberedRemoval[] = [];
    for (const [publicKey, known] of this.#known) {
      if (known.removedAtMs !== null && now - known.removedAtMs <= REMOVAL_MEMORY_MS)
        removals.push({ publicKey, revision: known.revision, agoMs: now - known.removedAtMs });
    }
    return removals;
  }

  /** Takes back what a previous run remembered (before any instruction of this run). */
  restore(removals: readonly RememberedRemoval[]): void {
    const now = this.#nowMs();
    for (const removal of removals) {
      if (removal.agoMs > REMOVAL_MEMORY_MS) continue;
      this.#forget(removal.publicKey, this.#known.get(removal.publicKey));
      this.#set(removal.publicKey, { revision: removal.revision, removedAtMs: now - removal.agoMs });
      this.#highest = Math.max(this.#highest, removal.revision);
    }
  }

  #prune(now: number): void {
    if (now - this.#lastPruneMs < PRUNE_EVERY_MS) return;
    this.#lastPruneMs = now;
    for (const [key, known] of this.#known) {
      if (known.removedAtMs !== null && now - known.removedAtMs > REMOVAL_MEMORY_MS) this.#forget(key, known);
    }
  }

  #set(publicKey: string, known: KnownKey): void {
    this.#known.set(publicKey, known);
    if (known.removedAtMs !== null) this.#removalCount++;
  }

  #forget(publicKey: string, known: KnownKey | undefined): void {
    if (known === undefined) return;
    this.#known.delete(publicKey);
    if (known.removedAtMs !== null) this.#removalCount--;
  }
}
