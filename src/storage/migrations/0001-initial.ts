// First schema: users, OAuth authorizations, WireGuard peers and their address pools.
// Column names follow the reference's schema (reference §9) where a table has a twin there.
// On PostgreSQL every text column compares bytewise (COLLATE "C"), as SQLite does: lists
// sorted by user id or public key come out in the same order from both databases, whatever
// locale the PostgreSQL database was created with.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const initialSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);
    await db.schema
      .createTable('users')
      .addColumn('user_id', text('varchar(255)'), (column) => column.primaryKey())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('last_seen', text('varchar(32)'), (column) => column.notNull())
      .addColumn('permission_list', text('text'), (column) => column.notNull().defaultTo('[]'))
      .addColumn('auth_data', text('text'))
      .addColumn('is_disabled', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();

    await db.schema
      .createTable('oauth_authorizations')
      .addColumn('auth_key', text('varchar(255)'), (column) => column.primaryKey())
      .addColumn('user_id', text('varchar(255)'), (column) =>
        column.notNull().references('users.user_id').onDelete('cascade'),
      )
      .addColumn('client_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('scope', text('varchar(255)'), (column) => column.notNull())
      .addColumn('authorized_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('expires_at', text('varchar(32)'), (column) => column.notNull())
      .execute();
    await db.schema.createIndex('oauth_authorizations_user_id').on('oauth_authorizations').column('user_id').execute();

    await db.schema
      .createTable('wg_peers')
      .addColumn('public_key', text('varchar(64)'), (column) => column.primaryKey())
      .addColumn('user_id', text('varchar(255)'), (column) =>
        column.notNull().references('users.user_id').onDelete('cascade'),
      )
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('display_name', text('varchar(255)'), (column) => column.notNull())
      .addColumn('ip_four', text('varchar(64)'), (column) => column.notNull().unique())
      .addColumn('ip_six', text('varchar(64)'), (column) => column.notNull().unique())
      .addColumn('pool_index', 'integer', (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('expires_at', text('varchar(32)'), (column) => column.notNull())
      // No foreign key to oauth_authorizations: deleting a user's authorizations keeps the
      // configurations (specification §4.11).
      .addColumn('auth_key', text('varchar(255)'))
      .execute();
    await db.schema.createIndex('wg_peers_user_id').on('wg_peers').column('user_id').execute();
    await db.schema.createIndex('wg_peers_listing').on('wg_peers').columns(['profile_id', 'created_at']).execute();
    // No index on node_number or expires_at: only the once-a-minute reconcile filters on
    // them, and every index costs each create a B-tree update.

    await db.schema
      .createTable('ip_pools')
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('range_four', text('varchar(64)'), (column) => column.notNull())
      .addColumn('range_six', text('varchar(64)'), (column) => column.notNull())
      .addColumn('next_index', 'integer', (column) => column.notNull())
      .addPrimaryKeyConstraint('ip_pools_pk', ['profile_id', 'node_number', 'range_four', 'range_six'])
      .execute();

    await db.schema
      .createTable('ip_pool_free')
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('range_four', text('varchar(64)'), (column) => column.notNull())
      .addColumn('range_six', text('varchar(64)'), (column) => column.notNull())
      .addColumn('pool_index', 'integer', (column) => column.notNull())
      .addPrimaryKeyConstraint('ip_pool_free_pk', [
        'profile_id',
        'node_number',
        'range_four',
        'range_six',
        'pool_index',
      ])
      .execute();
  },
};
