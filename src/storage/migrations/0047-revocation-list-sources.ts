// `revocation_list_sources`: for each configured revocation list source (file or URL), the newest
// list believed from it (DER), the CA it names and its thisUpdate. Kept in memory only, all was
// lost at a restart: until the first good reading an http source had no list in force, and whoever
// answers for its distribution point could keep it so, or have the portal believe an older list
// (from before a revocation, still within its nextUpdate) or another known CA's list in its
// place; a revoked certificate enrolled again.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const revocationListSources: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the other tables' keys.
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema
      .createTable('revocation_list_sources')
      .addColumn('location', text, (column) => column.primaryKey())
      .addColumn('issuer', 'text', (column) => column.notNull())
      .addColumn('this_update', 'text', (column) => column.notNull())
      .addColumn('list', 'text', (column) => column.notNull())
      .execute();
  },
};
