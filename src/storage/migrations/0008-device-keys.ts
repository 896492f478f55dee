// Devices that keep their own keys, and renewals without a new key: the public key of an OpenVPN
// configuration made from a device's certificate request (so /extend can re-issue its
// certificate), and whether a configuration's `configuration.expiring` warning is still to
// come. Numbered 0008: 0007 belongs to the webhooks work.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const deviceKeysSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    // Base64 of the DER SubjectPublicKeyInfo from the device's CSR; null: the portal made the key.
    await db.schema.alterTable('certificates').addColumn('public_key', text('text')).execute();
    // 1 once `configuration.expiring` was announced (or is not wanted); an /extend sets it again.
    for (const table of ['wg_peers', 'certificates']) {
      await db.schema
        .alterTable(table)
        .addColumn('expiry_warned', 'integer', (column) => column.notNull().defaultTo(0))
        .execute();
      // The scheduler asks for the earliest expiry of the configurations not yet warned about.
      await sql`CREATE INDEX ${sql.raw(`${table}_expiry_warning`)} ON ${sql.table(table)} (expires_at) WHERE expiry_warned = 0`.execute(
        db,
      );
    }
  },
};
