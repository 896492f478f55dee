// What the portal needs to believe a revocation list: `certificate_authorities`, the
// intermediate CAs seen in enrolled chains that led to a trust anchor (a list naming one must be
// signed by its key), and `revocation_list_holds`, lists that would retire too many devices at
// once, held until an administrator confirms them (`vpn-portal mdm confirm-crl`). In the
// database, so every portal instance knows the same CAs and sees the same confirmation.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const revocationListTrustSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema
      .createTable('certificate_authorities')
      .addColumn('fingerprint', text, (column) => column.primaryKey())
      .addColumn('subject', text, (column) => column.notNull())
      .addColumn('certificate', text, (column) => column.notNull())
      .addColumn('first_seen_at', text, (column) => column.notNull())
      .execute();
    await db.schema
      .createTable('revocation_list_holds')
      .addColumn('sha256', text, (column) => column.primaryKey())
      .addColumn('issuer', text, (column) => column.notNull())
      .addColumn('location', text, (column) => column.notNull())
      .addColumn('devices', 'integer', (column) => column.notNull())
      .addColumn('held_at', text, (column) => column.notNull())
      .addColumn('confirmed_at', text)
      .execute();
  },
};
