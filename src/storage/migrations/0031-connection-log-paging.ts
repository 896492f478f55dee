// The connection log paged newest first at 10,000,000 rows: an index on (user_id, start, id) for a
// user's history, which had none (its page walked the whole history); and (start, id) in place
// of the start alone, so the next page starts in the index at the cursor instead of walking
// every newer row first. And the daily housekeeping's blanking of the client's own address
// reads only the rows that still have one (a partial index by end), not the whole history.
import { sql, type Kysely, type Migration } from 'kysely';

export const connectionLogPagingIndexes: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('connection_log_user_id')
      .on('connection_log')
      .columns(['user_id', 'connected_at', 'log_id'])
      .execute();
    await db.schema
      .createIndex('connection_log_started')
      .on('connection_log')
      .columns(['connected_at', 'log_id'])
      .execute();
    await db.schema.dropIndex('connection_log_connected_at').execute();
    await db.schema
      .createIndex('connection_log_with_address')
      .on('connection_log')
      .column('disconnected_at')
      .where(sql.ref('originating_ip'), 'is not', null)
      .execute();
  },
};
