// Queries on `legal_holds` (migration 0024): a hold keeps one user's records (a device's hold,
// its user's) past their retention until it is released or its `until` passes.
import { inBatches, neverStopping, type Stopping } from './batches.js';
import type { Db } from './database.js';
import type { LegalHoldsTable } from './schema.js';

export interface StoredLegalHold {
  readonly holdId: string;
  readonly userId: string;
  readonly deviceId: string | null;
  readonly reason: string;
  readonly createdAt: string;
  readonly until: string;
  readonly releasedAt: string | null;
}

export async function insertLegalHold(db: Db, hold: StoredLegalHold): Promise<void> {
  await db
    .insertInto('legal_holds')
    .values({
      hold_id: hold.holdId,
      user_id: hold.userId,
      device_id: hold.deviceId,
      reason: hold.reason,
      created_at: hold.createdAt,
      until: hold.until,
      released_at: hold.releasedAt,
    })
    .execute();
}

/** Every hold still stored, newest first. */
export async function listLegalHolds(db: Db): Promise<StoredLegalHold[]> {
  const rows = await db
    .selectFrom('legal_holds')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('hold_id', 'desc')
    .execute();
  return rows.map(toHold);
}

export async function findLegalHold(db: Db, holdId: string): Promise<StoredLegalHold | undefined> {
  const row = await db.selectFrom('legal_holds').selectAll().where('hold_id', '=', holdId).executeTakeFirst();
  return row === undefined ? undefined : toHold(row);
}

/** Releases a hold that is in force at `at`; false when it was released already or has ended. */
export async function releaseStoredLegalHold(db: Db, holdId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('legal_holds')
    .set({ released_at: at })
    .where('hold_id', '=', holdId)
    .where('released_at', 'is', null)
    .where('until', '>', at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The users whose records a hold keeps at `at`, each once. */
export async function heldUserIds(db: Db, at: string): Promise<string[]> {
  const rows = await db
    .selectFrom('legal_holds')
    .select('user_id')
    .distinct()
    .where('released_at', 'is', null)
    .where('until', '>', at)
    .orderBy('user_id')
    .execute();
  return rows.map((row) => row.user_id);
}

/**
 * Whether a hold keeps this user's records at `at` (ATOM): a session that closes then keeps the
 * client's own address even where `Log.originatingIp` would blank it.
 */
export async function isUserHeld(db: Db, userId: string, at: string): Promise<boolean> {
  const row = await db
    .selectFrom('legal_holds')
    .select('hold_id')
    .where('user_id', '=', userId)
    .where('released_at', 'is', null)
    .where('until', '>', at)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Deletes holds that ended (released, or past their `until`) before `before`, in batches; returns how many. */
export async function pruneEndedLegalHolds(
  db: Db,
  before: string,
  stopping: Stopping = neverStopping,
): Promise<number> {
  const ended = db
    .selectFrom('legal_holds')
    .select('hold_id')
    .where((eb) =>
      eb.or([
        eb.and([eb('released_at', 'is not', null), eb('released_at', '<', before)]),
        eb.and([eb('released_at', 'is', null), eb('until', '<', before)]),
      ]),
    );
  return inBatches(async (limit) => {
    const result = await db.deleteFrom('legal_holds').where('hold_id', 'in', ended.limit(limit)).executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
}

function toHold(row: LegalHoldsTable): StoredLegalHold {
  return {
    holdId: row.hold_id,
    userId: row.user_id,
    deviceId: row.device_id,
    reason: row.reason,
    createdAt: row.created_at,
    until: row.until,
    releasedAt: row.released_at,
  };
}

/** What a retention pass did to one kind of record: removed (deleted or blanked), and kept for a hold. */
export interface RetentionCount {
  readonly removed: number;
  readonly held: number;
}
