// `imported_records.withheld`: the eduVPN import also notes the configurations it left because
// their user was disabled here while eduVPN had it enabled (1), beside those it brought (0), so
// that no later run brings them, not even once the user is enabled here again: eduVPN issued
// them while this portal had taken the user's access away.
import type { Kysely, Migration } from 'kysely';

export const withheldImports: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable('imported_records')
      .addColumn('withheld', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
  },
};
