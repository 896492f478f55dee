// Sessions of the admin console: a signed-in browser holds a random cookie whose
// SHA-256 names one row here, so every portal instance on one database knows the session (and
// its end) at once. A row names how its holder signed in (an admin key by its id, the Admin API
// secret by a digest of it) so every request can check that the credential still holds.
// Numbered 0017: the number this work was given.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const consoleSessionsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('console_sessions')
      .addColumn('session_hash', text('varchar(64)'), (column) => column.primaryKey())
      // `admin-key` or `secret`; another sign-in method adds its own value.
      .addColumn('method', text('varchar(16)'), (column) => column.notNull())
      .addColumn('key_id', text('varchar(64)'))
      // Who the session acts as in the audit log: the key's name, `secret`, …
      .addColumn('subject', text('varchar(255)'), (column) => column.notNull())
      .addColumn('secret_digest', text('varchar(64)'))
      .addColumn('csrf_token', text('varchar(64)'), (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('last_seen_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('expires_at', text('varchar(32)'), (column) => column.notNull())
      .execute();
    await db.schema.createIndex('console_sessions_expires_at').on('console_sessions').column('expires_at').execute();
  },
};
