// `legal_holds`: a user's or a device's records kept past their retention while a hold lasts
// (src/core/retention/). A device hold also names the device's user, whose records the history
// keeps (session history and the audit log are kept per user). Ended holds stay listed until
// the housekeeping prunes them after `auditLogRetention`.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const legalHoldsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema
      .createTable('legal_holds')
      .addColumn('hold_id', text, (column) => column.primaryKey())
      .addColumn('user_id', text, (column) => column.notNull())
      .addColumn('device_id', text)
      .addColumn('reason', text, (column) => column.notNull())
      .addColumn('created_at', text, (column) => column.notNull())
      .addColumn('until', text, (column) => column.notNull())
      .addColumn('released_at', text)
      .execute();
    await db.schema.createIndex('legal_holds_user').on('legal_holds').columns(['user_id']).execute();
  },
};
