// RADIUS accounting: the sessions being accounted for (one row from Start to Stop: the stable
// Acct-Session-Id and when the next Interim-Update is due) and the outbox of Accounting-Requests,
// one row per record and server, written in the transaction of the session change it reports and
// sent by every portal instance under a lease until the server answers or the record is too old.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const radiusAccountingSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('radius_sessions')
      .addColumn('acct_session_id', text('varchar(36)'), (column) => column.primaryKey())
      .addColumn('connection_id', text('text'), (column) => column.notNull())
      .addColumn('node_number', 'integer', (column) => column.notNull())
      // The Start record as sent (JSON): Interim-Update and Stop repeat its attributes.
      .addColumn('start_record', text('text'), (column) => column.notNull())
      .addColumn('started_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('next_interim_at', text('varchar(32)'), (column) => column.notNull())
      .execute();
    await db.schema
      .createIndex('radius_sessions_connection')
      .on('radius_sessions')
      .columns(['connection_id', 'node_number'])
      .execute();
    await db.schema.createIndex('radius_sessions_interim').on('radius_sessions').column('next_interim_at').execute();

    await db.schema
      .createTable('radius_outbox')
      // Time-ordered (UUIDv7): records of a server go out oldest first.
      .addColumn('record_id', text('varchar(36)'), (column) => column.primaryKey())
      // `HOST:PORT` of accounting.radius.servers[].address.
      .addColumn('server', text('varchar(300)'), (column) => column.notNull())
      .addColumn('acct_session_id', text('varchar(36)'), (column) => column.notNull())
      .addColumn('connection_id', text('text'), (column) => column.notNull())
      // The record (JSON, src/protocol/radius.ts): everything but Identifier, authenticator and Acct-Delay-Time.
      .addColumn('record', text('text'), (column) => column.notNull())
      // When the event happened: Acct-Delay-Time and accounting.radius.maxAge count from it.
      .addColumn('event_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('attempts', 'integer', (column) => column.notNull())
      .addColumn('next_attempt_at', text('varchar(32)'), (column) => column.notNull())
      // Set while one instance sends it; another may take it over once the lease ran out.
      .addColumn('lease_until', text('varchar(32)'))
      .addColumn('lease_token', text('varchar(32)'))
      .execute();
    await db.schema
      .createIndex('radius_outbox_due')
      .on('radius_outbox')
      .columns(['next_attempt_at', 'record_id'])
      .execute();
  },
};
