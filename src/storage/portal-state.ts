// Queries on `portal_state`: small named values every portal instance reads the same, such as
// the day housekeeping last ran.
import type { Db } from './database.js';

export async function readState(db: Db, key: string): Promise<string | null> {
  const row = await db.selectFrom('portal_state').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value ?? null;
}

export async function writeState(db: Db, key: string, value: string): Promise<void> {
  await db
    .insertInto('portal_state')
    .values({ key, value })
    .onConflict((conflict) => conflict.column('key').doUpdateSet({ value }))
    .execute();
}

export async function deleteState(db: Db, key: string): Promise<void> {
  await db.deleteFrom('portal_state').where('key', '=', key).execute();
}

/**
 * Writes `value` unless the key holds a greater one (compared as strings: ISO times of one
 * format compare as times) that is not above `ceiling` (a time ahead of the writer's clock, from
 * a clock set wrong, would otherwise hold every later write back until that time came); answers
 * whether it was written. One statement, so of instances racing the greatest value stays.
 */
export async function raiseState(db: Db, key: string, value: string, ceiling: string): Promise<boolean> {
  const written = await db
    .insertInto('portal_state')
    .values({ key, value })
    .onConflict((conflict) =>
      conflict
        .column('key')
        .doUpdateSet({ value })
        .where((eb) => eb.or([eb('portal_state.value', '<=', value), eb('portal_state.value', '>', ceiling)])),
    )
    .executeTakeFirst();
  return (written.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/**
 * Writes `value` only over `expected` (null: only when the key holds nothing): answers whether
 * it was written. One statement, so a value another instance wrote meanwhile is never overwritten
 * (PostgreSQL compares the row's newest version once it has its lock).
 */
export async function replaceState(db: Db, key: string, expected: string | null, value: string): Promise<boolean> {
  if (expected === null) {
    const inserted = await db
      .insertInto('portal_state')
      .values({ key, value })
      .onConflict((conflict) => conflict.column('key').doNothing())
      .executeTakeFirst();
    return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }
  const updated = await db
    .updateTable('portal_state')
    .set({ value })
    .where('key', '=', key)
    .where('value', '=', expected)
    .executeTakeFirst();
  return updated.numUpdatedRows > 0n;
}
