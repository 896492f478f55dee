// What the nodes confirmed gone, written for many calls in one change (a group commit): under a
// bulk revocation every disable_user ends with a small change of its own, whose round trips cost
// more than its rows. While one group is written, the confirmations that come meanwhile wait and
// are written together after it; an idle portal writes a call's at once. Each call's
// confirmations stay its own: a removal one call's node confirmed marks that call's receipts only.
import type { RevocationId } from '../../shared/ids.js';
import type { ConfirmedRemoval, ReceiptConfirmation } from '../../storage/revocation-nodes.js';

/** Writes the confirmations of some calls, each for its own receipts (confirmRemovals). */
export type ConfirmationWrite = (confirmations: readonly ReceiptConfirmation[]) => Promise<void>;

interface Waiting extends ReceiptConfirmation {
  readonly revocationIds: readonly RevocationId[];
  readonly write: ConfirmationWrite;
  readonly settle: (error?: unknown) => void;
}

/** Receipts in one group at most: their ids are one statement's list. */
const MOST_RECEIPTS_PER_GROUP = 200;

export class GroupedConfirmations {
  readonly #waiting: Waiting[] = [];
  #writing = false;

  /** Resolves once `confirmed` is written (with others', by the `write` of the group's first); rejects with the group's failure. */
  confirm(
    revocationIds: readonly RevocationId[],
    confirmed: readonly ConfirmedRemoval[],
    write: ConfirmationWrite,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({
        revocationIds,
        confirmed,
        write,
        settle: (error) => (error === undefined ? resolve() : reject(error)),
      });
      if (!this.#writing) void this.#writeGroups();
    });
  }

  async #writeGroups(): Promise<void> {
    this.#writing = true;
    try {
      for (let group = this.#nextGroup(); group.length > 0; group = this.#nextGroup()) {
        const [first] = group;
        if (first === undefined) break;
        try {
          await first.write(group.map(({ revocationIds, confirmed }) => ({ revocationIds, confirmed })));
          for (const waiting of group) waiting.settle();
        } catch (error) {
          for (const waiting of group) waiting.settle(error ?? new Error('confirmations not written'));
        }
      }
    } finally {
      this.#writing = false;
    }
  }

  /** The waiting confirmations of at most MOST_RECEIPTS_PER_GROUP receipts, oldest first. */
  #nextGroup(): Waiting[] {
    let receipts = 0;
    let taken = 0;
    for (const waiting of this.#waiting) {
      if (taken > 0 && receipts + waiting.revocationIds.length > MOST_RECEIPTS_PER_GROUP) break;
      receipts += waiting.revocationIds.length;
      taken++;
    }
    return this.#waiting.splice(0, taken);
  }
}
