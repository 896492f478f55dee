// Whether a change committed when the connection broke after its COMMIT was sent (a restart, a
// failover, a proxy that dropped it): every change on PostgreSQL inserts one row with a fresh
// id as a write of its own transaction (a closing write: on a create it is part of the last
// statement, no round trip of its own), and that row is read back afterwards. The read back is
// an insert of the same id in a transaction that is rolled back: it conflicts with the row if
// the change committed, and goes in if it did not; and should the change's session still be
// committing on the server (a connection cut by the network, not by the server), the insert
// waits on the unique index until that session ended. So the answer is never a guess.
import { randomUUID } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import type { Db } from './database.js';

/** Markers older than this are deleted by housekeeping: they are read back within seconds. */
export const CHANGE_MARKER_SECONDS = 3600;

/** A fresh marker id for one run of a change (its closing write: src/storage/closing-writes.ts). */
export function newChangeMarkerId(): string {
  return randomUUID();
}

/** The statement that writes the marker, run as the change's last write. */
export function changeMarkerInsert(markerId: string): RawBuilder<unknown> {
  return sql`INSERT INTO change_markers (marker_id, created_at) VALUES (${markerId}, ${Date.now()})`;
}

/** True when the change that wrote `markerId` committed, false when it did not (and never will). */
export async function changeCommitted(db: Db, markerId: string): Promise<boolean> {
  const trx = await db.startTransaction().execute();
  try {
    const { numInsertedOrUpdatedRows } = await trx
      .insertInto('change_markers')
      .values({ marker_id: markerId, created_at: Date.now() })
      .onConflict((conflict) => conflict.column('marker_id').doNothing())
      .executeTakeFirst();
    return numInsertedOrUpdatedRows === 0n;
  } finally {
    await trx
      .rollback()
      .execute()
      .catch(() => undefined);
  }
}

/** Deletes markers older than `seconds`; answers how many. */
export async function pruneChangeMarkers(db: Db, seconds: number): Promise<number> {
  const result = await db
    .deleteFrom('change_markers')
    .where('created_at', '<', Date.now() - seconds * 1000)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
