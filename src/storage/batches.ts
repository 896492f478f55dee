// Deletes (and blankings) in batches, for the housekeeping's retention: one statement over a
// backlog (a retention shortened from a year to a month, a portal down for weeks) can run past
// PostgreSQL's limit on a statement (`databaseTimeout`) and fail again every day, so what the
// retention says must go never goes. Batches of a bounded size each end in time. So do the
// counts of what a legal hold keeps: a held user's history can be as long as any backlog.

/** Rows one statement of a retention prune deletes or changes at most. */
export const BATCH_ROWS = 1_000;

/** Asked between two batches: whether to stop there (the portal stops, the lock was lost). */
export type Stopping = () => boolean;

/** Never stops between batches. */
export const neverStopping: Stopping = () => false;

/**
 * Runs `batch` (it deletes or changes at most `limit` rows and says how many) until one does
 * fewer, or `stopping` says to stop; returns how many rows the batches did in all.
 */
export async function inBatches(
  batch: (limit: number) => Promise<number>,
  stopping: Stopping = neverStopping,
  limit: number = BATCH_ROWS,
): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await batch(limit);
    total += done;
    if (done < limit || stopping()) return total;
  }
}

/** A row of a counted page: its key, to read the next page after, and whether it counts. */
export interface CountedRow<Key> {
  readonly key: Key;
  readonly counts: boolean;
}

/**
 * Counts rows a page at a time: `page` reads at most `limit` rows in key order after the key it
 * is given (undefined: from the first), each saying whether it counts; the pages go on until one
 * is short, each statement reading no more than a batch does.
 */
export async function countInBatches<Key>(
  page: (after: Key | undefined, limit: number) => Promise<readonly CountedRow<Key>[]>,
  limit: number = BATCH_ROWS,
): Promise<number> {
  let total = 0;
  let after: Key | undefined;
  for (;;) {
    const rows = await page(after, limit);
    total += rows.filter((row) => row.counts).length;
    const last = rows.at(-1);
    if (last === undefined || rows.length < limit) return total;
    after = last.key;
  }
}
