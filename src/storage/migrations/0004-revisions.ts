// Revisions: every change to whether a WireGuard peer belongs on its node takes a number from
// one counter, so a node can tell an older instruction from a newer one (see
// src/storage/revisions.ts); indexes for the expiry sweep; and `node_resets`, where an
// administrator confirms that a node may be emptied by a database that has never held a
// configuration for it.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const revisionsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    await db.schema
      .alterTable('wg_peers')
      .addColumn('revision', 'bigint', (column) => column.notNull().defaultTo(0))
      .execute();
    if (postgres) {
      // A sequence never blocks: concurrent transactions each take a number without waiting.
      await sql`CREATE SEQUENCE change_revision AS bigint MINVALUE 1`.execute(db);
    } else {
      // SQLite runs one writer at a time, so a one-row counter costs no concurrency.
      await db.schema
        .createTable('change_revision')
        .addColumn('id', 'integer', (column) => column.primaryKey().check(sql`id = 1`))
        .addColumn('value', 'integer', (column) => column.notNull())
        .execute();
      await sql`INSERT INTO change_revision (id, value) VALUES (1, 0)`.execute(db);
    }
    // The expiry sweep asks for the earliest expiry and the expired rows often.
    await db.schema.createIndex('wg_peers_expires_at').on('wg_peers').column('expires_at').execute();
    await db.schema.createIndex('certificates_expires_at').on('certificates').column('expires_at').execute();
    await db.schema
      .createTable('node_resets')
      .addColumn('node_number', 'integer', (column) => column.primaryKey())
      .addColumn('confirmed_at', sql.raw(postgres ? 'varchar(32) collate "C"' : 'varchar(32)'), (column) =>
        column.notNull(),
      )
      .execute();
  },
};
