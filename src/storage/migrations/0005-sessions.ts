// Sessions and operations: at most one open WireGuard session per peer and node (the portal
// derives them from handshakes, see core/sessions/wireguard.ts), an index for pruning old
// history, the reference's `live_stats` and `aggregate_stats`, and `portal_state`, a small
// key-value table for what the instances must agree on (the day housekeeping last ran).
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const sessionsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);
    await sql`CREATE UNIQUE INDEX connection_log_open_wireguard ON connection_log (connection_id, node_number)
      WHERE disconnected_at IS NULL AND vpn_proto = 'wireguard'`.execute(db);
    await db.schema
      .createIndex('connection_log_disconnected_at')
      .on('connection_log')
      .column('disconnected_at')
      .execute();
    await db.schema
      .createTable('live_stats')
      .addColumn('date_time', text('varchar(32)'), (column) => column.notNull())
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('connection_count', 'integer', (column) => column.notNull())
      .addColumn('unique_user_count', 'integer', (column) => column.notNull())
      .addPrimaryKeyConstraint('live_stats_key', ['date_time', 'profile_id'])
      .execute();
    await db.schema
      .createTable('aggregate_stats')
      .addColumn('date', text('varchar(10)'), (column) => column.notNull())
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('max_connection_count', 'integer', (column) => column.notNull())
      .addColumn('unique_user_count', 'integer', (column) => column.notNull())
      .addPrimaryKeyConstraint('aggregate_stats_key', ['date', 'profile_id'])
      .execute();
    await db.schema
      .createTable('portal_state')
      .addColumn('key', text('varchar(64)'), (column) => column.primaryKey())
      .addColumn('value', text('text'), (column) => column.notNull())
      .execute();
  },
};
