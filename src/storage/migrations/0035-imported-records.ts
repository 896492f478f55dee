// `imported_records`: each user and configuration the eduVPN import brought, so that a later run
// leaves one that is not here any more (revoked here: deleted, expired, destroyed) instead of
// bringing it back. A configuration's row goes once its eduVPN expiry has passed (the import
// leaves an expired one anyway); a user's once it is gone here and its destroy receipt was pruned
// (src/storage/imported-records.ts).
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const importedRecordsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the tables the ids come from.
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema
      .createTable('imported_records')
      // user, wireguard or openvpn.
      .addColumn('kind', text, (column) => column.notNull())
      // The user id, WireGuard public key or OpenVPN common name.
      .addColumn('record_id', text, (column) => column.notNull())
      .addColumn('imported_at', text, (column) => column.notNull())
      // A configuration's expiry in eduVPN; null for a user.
      .addColumn('expires_at', text)
      .addPrimaryKeyConstraint('imported_records_pk', ['kind', 'record_id'])
      .execute();
    await db.schema.createIndex('imported_records_expires_at').on('imported_records').column('expires_at').execute();
  },
};
