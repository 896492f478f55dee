// Admin keys (named, scoped, expiring credentials of the Admin API, stored only as a keyed
// hash), the audit log of Admin API calls, and the answers kept for retries with an
// Idempotency-Key. Numbered 0006: 0005 belongs to the WireGuard sessions work.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const adminKeysSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('admin_keys')
      .addColumn('key_id', text('varchar(32)'), (column) => column.primaryKey())
      .addColumn('name', text('varchar(64)'), (column) => column.notNull())
      .addColumn('scope', text('varchar(16)'), (column) => column.notNull())
      // JSON arrays; null: every profile / only adminApi.allowList.
      .addColumn('profiles', text('text'))
      .addColumn('allow_list', text('text'))
      .addColumn('secret_hash', text('varchar(64)'), (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('expires_at', text('varchar(32)'))
      // The ISO 8601 lifetime the key was made with: a rotation gives the new key as long.
      .addColumn('lifetime', text('varchar(64)'))
      .addColumn('revoked_at', text('varchar(32)'))
      .addColumn('replaced_by', text('varchar(32)'))
      .addColumn('last_used_at', text('varchar(32)'))
      .addColumn('last_used_address', text('varchar(64)'))
      .execute();
    // One current key per name; keys rotated out (in their grace period) or revoked keep it too.
    await sql`CREATE UNIQUE INDEX admin_keys_current_name ON admin_keys (name) WHERE revoked_at IS NULL AND replaced_by IS NULL`.execute(
      db,
    );

    // No foreign keys: the record outlives users, configurations and keys.
    await db.schema
      .createTable('audit_log')
      // Time-ordered (milliseconds, then a counter and randomness): the order of the log and its cursor.
      .addColumn('audit_id', text('varchar(32)'), (column) => column.primaryKey())
      .addColumn('at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('key_name', text('varchar(64)'))
      .addColumn('source_address', text('varchar(64)'), (column) => column.notNull())
      .addColumn('call', text('varchar(255)'), (column) => column.notNull())
      .addColumn('parameters', text('text'), (column) => column.notNull())
      .addColumn('status', 'integer', (column) => column.notNull())
      .addColumn('user_id', text('varchar(255)'))
      .addColumn('connection_ids', text('text'), (column) => column.notNull())
      .addColumn('detail', text('text'))
      .execute();
    await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
    await db.schema.createIndex('audit_log_key_name').on('audit_log').columns(['key_name', 'audit_id']).execute();
    await db.schema.createIndex('audit_log_user_id').on('audit_log').columns(['user_id', 'audit_id']).execute();

    await db.schema
      .createTable('idempotency_records')
      .addColumn('key_name', text('varchar(64)'), (column) => column.notNull())
      .addColumn('idempotency_key', text('varchar(255)'), (column) => column.notNull())
      .addColumn('call', text('varchar(64)'), (column) => column.notNull())
      .addColumn('fingerprint', text('varchar(64)'), (column) => column.notNull())
      // The request that reserved the key; only it may complete or release the record.
      .addColumn('owner', text('varchar(32)'), (column) => column.notNull())
      .addColumn('state', text('varchar(16)'), (column) => column.notNull())
      .addColumn('status', 'integer')
      // The answer, sealed with AES-256-GCM (DATA/keys/idempotency.key).
      .addColumn('answer', text('text'))
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('expires_at', text('varchar(32)'), (column) => column.notNull())
      .addPrimaryKeyConstraint('idempotency_records_pk', ['key_name', 'idempotency_key'])
      .execute();
    await db.schema
      .createIndex('idempotency_records_expires_at')
      .on('idempotency_records')
      .column('expires_at')
      .execute();
  },
};
