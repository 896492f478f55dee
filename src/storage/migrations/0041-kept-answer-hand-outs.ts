// What a kept answer (Idempotency-Key) hands out that can be taken back, as a kind and an id: a
// configuration (as 0039's connection_id named it), an admin key made by `create_admin_key`, a
// webhook's signing secret (`create_webhook`, `rotate_webhook_secret`), an enrollment token.
// Once that is revoked or replaced the answer is dropped and a retry with its key is refused
// (src/listeners/kept-answers.ts). connection_id moves into the pair and goes.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const keptAnswerHandOuts: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the tables the ids come from.
    const text = (type: `varchar(${number})`): Expression<unknown> => sql.raw(postgres ? `${type} collate "C"` : type);
    await db.schema.alterTable('idempotency_records').addColumn('handed_out_kind', text('varchar(32)')).execute();
    await db.schema.alterTable('idempotency_records').addColumn('handed_out_id', text('varchar(255)')).execute();
    await sql`UPDATE idempotency_records SET handed_out_kind = 'configuration', handed_out_id = connection_id
      WHERE connection_id IS NOT NULL`.execute(db);
    await db.schema.dropIndex('idempotency_records_connection_id').execute();
    await db.schema.alterTable('idempotency_records').dropColumn('connection_id').execute();
    // A change that revokes or replaces something finds the answers that handed it out by this.
    await db.schema
      .createIndex('idempotency_records_handed_out')
      .on('idempotency_records')
      .columns(['handed_out_kind', 'handed_out_id'])
      .execute();
  },
};
