// The history of each node's NAT mapping (src/storage/nat-mappings.ts): one row per mapping a
// node put in force, from the moment it says it applied it, so that an abuse report about an
// old moment is read through the mapping of that moment. The key (node, applied_at) makes a
// second portal instance that read the same node_info record nothing.
// Numbered 0025: the number this work was given.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const natMappingsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const text = (length: number) => sql.raw(postgres ? `varchar(${length}) collate "C"` : `varchar(${length})`);
    await db.schema
      .createTable('nat_mappings')
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('applied_at', text(25), (column) => column.notNull())
      .addColumn('mode', text(16), (column) => column.notNull())
      .addColumn('ranges', 'text')
      .addColumn('public_addresses', 'text')
      .addColumn('ports_per_client', 'integer')
      .addColumn('recorded_at', text(25), (column) => column.notNull())
      .addPrimaryKeyConstraint('nat_mappings_pkey', ['node_number', 'applied_at'])
      .execute();
  },
};
