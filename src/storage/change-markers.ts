// Whether a change committed when its connection broke after its COMMIT, or its one statement,
// was sent (a restart, a failover, a proxy that dropped it): every change on PostgreSQL inserts
// one row with a fresh id as a write of its own transaction (a closing write: on a create it is
// part of the one statement, no round trip of its own), and that row is read back afterwards.
// The read back inserts the same id and keeps it (a tombstone): it conflicts with the row if the
// change committed; if it goes in, the change can never commit, since its own insert of the id
// would now fail. Should the change's session still be running on the server (a connection cut
// by the network, not by the server), the insert waits on the unique index until that session
// ended; should the change's one statement still be on its way to the server, it arrives to
// find the tombstone and fails. A read back whose own answer was lost asks again, and may then
// conflict with the tombstone it left itself: the row says which it is. So the answer is never
// a guess.
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

/**
 * True when the change that wrote `markerId` committed, false when it did not (and now never
 * will). May be asked again when its answer was lost: its own tombstone then answers false.
 */
export async function changeCommitted(db: Db, markerId: string): Promise<boolean> {
  const { numInsertedOrUpdatedRows } = await db
    .insertInto('change_markers')
    .values({ marker_id: markerId, created_at: Date.now(), tombstone: 1 })
    .onConflict((conflict) => conflict.column('marker_id').doNothing())
    .executeTakeFirst();
  if (numInsertedOrUpdatedRows !== 0n) return false;
  const found = await db
    .selectFrom('change_markers')
    .select('tombstone')
    .where('marker_id', '=', markerId)
    .executeTakeFirst();
  // Rows go only after an hour (pruneChangeMarkers): one that conflicted a moment ago is there.
  if (found === undefined) throw new Error(`the change marker ${markerId} vanished while it was read back`);
  return Number(found.tombstone) === 0;
}

/** Deletes markers older than `seconds`; answers how many. */
export async function pruneChangeMarkers(db: Db, seconds: number): Promise<number> {
  const result = await db
    .deleteFrom('change_markers')
    .where('created_at', '<', Date.now() - seconds * 1000)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
