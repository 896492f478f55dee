// Refusals of the Admin API are coalesced in the audit log: the first refusal of a source and a
// reason in a minute is a row, the further ones only count into its `repeated`, so a flood of
// bad keys costs a bounded number of rows. The bucket (minute, source, reason) is a unique key,
// so concurrent refusals, also on several portal instances, meet in one row by an upsert.
// Numbered 0012: 0011 belongs to other work.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const auditRefusalsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // How many more refusals of the same bucket came after the row's own; 0 for every other row.
    await db.schema
      .alterTable('audit_log')
      .addColumn('repeated', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
    // A hash of the bucket on refusal rows; null (never equal to another) on every other row.
    await db.schema
      .alterTable('audit_log')
      .addColumn('refusal_bucket', sql.raw(postgres ? 'varchar(64) collate "C"' : 'varchar(64)'))
      .execute();
    await db.schema.createIndex('audit_log_refusal_bucket').on('audit_log').column('refusal_bucket').unique().execute();
  },
};
