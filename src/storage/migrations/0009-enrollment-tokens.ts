// Enrollment tokens: an administrator's one-use (or few-use) permission for a
// device to fetch its configuration itself, with its own key. Only a keyed hash of the token
// is stored. Numbered 0009: 0007 belongs to the webhooks work.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const enrollmentTokensSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('enrollment_tokens')
      .addColumn('token_id', text('varchar(32)'), (column) => column.primaryKey())
      .addColumn('secret_hash', text('varchar(64)'), (column) => column.notNull())
      // Destroying the user deletes its tokens with it.
      .addColumn('user_id', text('varchar(255)'), (column) =>
        column.notNull().references('users.user_id').onDelete('cascade'),
      )
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('display_name', text('varchar(255)'))
      // The configuration's lifetime (create's expires_in); null: sessionExpiry.
      .addColumn('expires_in', text('varchar(64)'))
      .addColumn('uses', 'integer', (column) => column.notNull())
      // Taken by a conditional update in the transaction that stores the configuration.
      .addColumn('uses_left', 'integer', (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      // The admin key that made it (`secret` for the specification's secret).
      .addColumn('created_by', text('varchar(64)'))
      .addColumn('expires_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('revoked_at', text('varchar(32)'))
      .addColumn('last_used_at', text('varchar(32)'))
      .execute();
    await db.schema.createIndex('enrollment_tokens_user_id').on('enrollment_tokens').column('user_id').execute();
    await db.schema.createIndex('enrollment_tokens_expires_at').on('enrollment_tokens').column('expires_at').execute();
  },
};
