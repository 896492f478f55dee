// `mdm_inventory_misses`: the live devices the last readable MDM inventory pass did not find,
// each with when a pass first missed it. A device is retired only when two passes in a row miss
// it: one reading can skip a device that is there (Jamf's offsets shift when a device is deleted
// and another added between two pages), and a retirement is final.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const mdmInventoryMisses: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the other tables' ids.
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema
      .createTable('mdm_inventory_misses')
      .addColumn('device_id', text, (column) => column.primaryKey())
      .addColumn('first_missed_at', 'text', (column) => column.notNull())
      .execute();
  },
};
