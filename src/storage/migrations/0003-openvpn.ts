// OpenVPN: one `certificates` row per OpenVPN configuration (reference §9), and
// `connection_log`, the history of OpenVPN connections as the nodes report them.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const openVpnSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);
    await db.schema
      .createTable('certificates')
      .addColumn('common_name', text('varchar(64)'), (column) => column.primaryKey())
      .addColumn('user_id', text('varchar(255)'), (column) =>
        column.notNull().references('users.user_id').onDelete('cascade'),
      )
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('display_name', text('varchar(255)'), (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('expires_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('auth_key', text('varchar(255)'))
      .execute();
    await db.schema.createIndex('certificates_user_id').on('certificates').column('user_id').execute();

    // No foreign key: the history outlives deleted users and configurations (reference §9).
    await db.schema
      .createTable('connection_log')
      .addColumn('log_id', text('varchar(64)'), (column) => column.primaryKey())
      .addColumn('user_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('vpn_proto', text('varchar(16)'), (column) => column.notNull())
      .addColumn('connection_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('ip_four', text('varchar(64)'), (column) => column.notNull())
      .addColumn('ip_six', text('varchar(64)'), (column) => column.notNull())
      .addColumn('originating_ip', text('varchar(64)'))
      .addColumn('connected_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('disconnected_at', text('varchar(32)'))
      .addColumn('bytes_in', 'bigint')
      .addColumn('bytes_out', 'bigint')
      .execute();
    await db.schema.createIndex('connection_log_connected_at').on('connection_log').column('connected_at').execute();
    await db.schema
      .createIndex('connection_log_connection_id')
      .on('connection_log')
      .columns(['connection_id', 'disconnected_at'])
      .execute();
  },
};
