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
