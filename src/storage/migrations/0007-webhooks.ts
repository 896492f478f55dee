// Signed webhooks: the subscriptions (their signing secrets sealed with DATA/keys/webhooks.key),
// the outbox — one delivery per event and subscription, written in the transaction of the change
// it reports and worked off by every portal instance under a lease — and the log of each
// delivery's attempts. Numbered 0007: 0008 onwards belong to the device-key and enrollment work.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const webhooksSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('webhooks')
      .addColumn('webhook_id', text('varchar(32)'), (column) => column.primaryKey())
      .addColumn('url', text('text'), (column) => column.notNull())
      // JSON array of event types; ["*"]: every type.
      .addColumn('event_types', text('text'), (column) => column.notNull())
      .addColumn('description', text('varchar(255)'))
      // AES-256-GCM sealed (src/keys/answer-cipher.ts); the previous secret signs too until previous_secret_until.
      .addColumn('secret', text('text'), (column) => column.notNull())
      .addColumn('previous_secret', text('text'))
      .addColumn('previous_secret_until', text('varchar(32)'))
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .execute();

    // No foreign keys: the log outlives a deleted subscription until housekeeping prunes it.
    await db.schema
      .createTable('webhook_deliveries')
      // Time-ordered (UUIDv7): the order of the log and its cursor.
      .addColumn('delivery_id', text('varchar(36)'), (column) => column.primaryKey())
      .addColumn('webhook_id', text('varchar(32)'), (column) => column.notNull())
      // The payload's `id`: the same for every subscription and every attempt.
      .addColumn('event_id', text('varchar(36)'), (column) => column.notNull())
      .addColumn('event_type', text('varchar(64)'), (column) => column.notNull())
      // The exact body sent at every attempt.
      .addColumn('payload', text('text'), (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      // pending, delivered, failed (gave up) or cancelled (the subscription was deleted).
      .addColumn('state', text('varchar(16)'), (column) => column.notNull())
      .addColumn('attempts', 'integer', (column) => column.notNull())
      .addColumn('next_attempt_at', text('varchar(32)'), (column) => column.notNull())
      // Set while one instance sends it; another may take it over once the lease ran out.
      .addColumn('lease_until', text('varchar(32)'))
      .addColumn('lease_token', text('varchar(32)'))
      .addColumn('finished_at', text('varchar(32)'))
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .columns(['state', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_webhook')
      .on('webhook_deliveries')
      .columns(['webhook_id', 'delivery_id'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_created_at')
      .on('webhook_deliveries')
      .column('created_at')
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_event')
      .on('webhook_deliveries')
      .columns(['event_id', 'webhook_id'])
      .unique()
      .execute();

    await db.schema
      .createTable('webhook_attempts')
      .addColumn('delivery_id', text('varchar(36)'), (column) => column.notNull())
      .addColumn('attempt', 'integer', (column) => column.notNull())
      .addColumn('started_at', text('varchar(32)'), (column) => column.notNull())
      // sending, delivered, failed, refused (the address guard) or interrupted (the portal stopped).
      .addColumn('outcome', text('varchar(16)'), (column) => column.notNull())
      .addColumn('status', 'integer')
      .addColumn('duration_ms', 'integer')
      .addColumn('detail', text('text'))
      .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'attempt'])
      .execute();
  },
};
