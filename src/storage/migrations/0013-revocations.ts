// Revocation receipts, the proof that a revocation reached every node: what a disable_user, destroy, delete_connection or expiry
// asked the nodes to take away, and when each node confirmed it. One row per receipt in
// `revocations`, one per configuration on its node in `revocation_nodes` (a node's part is
// applied once all its rows are). No reference to `users`: a destroyed user's receipt stays.
// Numbered 0013: 0011 and 0012 belong to other work of the same round.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const revocationsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('revocations')
      .addColumn('revocation_id', text('varchar(36)'), (column) => column.primaryKey())
      .addColumn('user_id', text('varchar(255)'), (column) => column.notNull())
      // The call that made it: disable_user, destroy, delete_connection, expiry.
      .addColumn('reason', text('varchar(32)'), (column) => column.notNull())
      // pending, overdue, applied, superseded; moved by conditional updates only.
      .addColumn('state', text('varchar(16)'), (column) => column.notNull())
      .addColumn('requested_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('overdue_at', text('varchar(32)'))
      .addColumn('applied_at', text('varchar(32)'))
      .addColumn('superseded_at', text('varchar(32)'))
      .execute();
    await db.schema.createIndex('revocations_state').on('revocations').columns(['state', 'requested_at']).execute();
    await db.schema.createIndex('revocations_user_id').on('revocations').column('user_id').execute();
    await db.schema.createIndex('revocations_requested_at').on('revocations').column('requested_at').execute();

    await db.schema
      .createTable('revocation_nodes')
      .addColumn('revocation_id', text('varchar(36)'), (column) =>
        column.notNull().references('revocations.revocation_id').onDelete('cascade'),
      )
      .addColumn('node_number', 'integer', (column) => column.notNull())
      .addColumn('connection_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('vpn_proto', text('varchar(16)'), (column) => column.notNull())
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      // When the node confirmed this configuration gone; null while pending.
      .addColumn('applied_at', text('varchar(32)'))
      .addPrimaryKeyConstraint('revocation_nodes_pk', ['revocation_id', 'node_number', 'connection_id'])
      .execute();
    await db.schema
      .createIndex('revocation_nodes_pending')
      .on('revocation_nodes')
      .columns(['node_number', 'applied_at'])
      .execute();
  },
};
