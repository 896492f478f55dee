// A change's marker and the tombstone its read back leaves (src/storage/change-markers.ts) hold
// the same id. When the read back's own answer is lost and it asks again, the row it finds may
// be its own tombstone, not the change's marker: `tombstone` tells them apart. Rows from before
// are markers; a tombstone left by an older version is taken for one, as that version did.
import type { Kysely, Migration } from 'kysely';

export const changeMarkerTombstones: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable('change_markers')
      .addColumn('tombstone', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
  },
};
