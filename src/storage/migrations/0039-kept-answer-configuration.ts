// The configuration a kept `create` answer handed out (its WireGuard public key or OpenVPN Common
// Name): once that configuration is revoked (deleted, expired, its user disabled or destroyed) the
// answer is dropped and a retry with its Idempotency-Key is refused, so a revoked file and its
// private key are never handed out again (src/listeners/kept-answers.ts). Answers kept before
// this column name none; they are given as before until their 24 hours pass.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const keptAnswerConfiguration: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the tables the ids come from.
    const text = sql.raw(postgres ? 'varchar(255) collate "C"' : 'varchar(255)');
    await db.schema.alterTable('idempotency_records').addColumn('connection_id', text).execute();
    // A revocation finds the answers of its configurations by this.
    await db.schema
      .createIndex('idempotency_records_connection_id')
      .on('idempotency_records')
      .column('connection_id')
      .execute();
  },
};
