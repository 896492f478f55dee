// The changes' commit markers (src/storage/change-markers.ts): every change on PostgreSQL writes
// one row with an id of its own in its transaction, so when the connection breaks after COMMIT
// was sent, the portal reads back whether the change committed instead of guessing. Created on
// SQLite too (one schema for both), where nothing writes it: no connection to lose there.
// Numbered 0022: the number this work was given.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const changeMarkersSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    await db.schema
      .createTable('change_markers')
      .addColumn('marker_id', sql.raw(postgres ? 'varchar(36) collate "C"' : 'varchar(36)'), (column) =>
        column.primaryKey(),
      )
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .execute();
    await db.schema.createIndex('change_markers_created_at').on('change_markers').column('created_at').execute();
  },
};
