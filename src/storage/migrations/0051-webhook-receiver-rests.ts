// Columns on `webhooks` for a receiver's rest: how many attempts in a row got no answer, and
// until when the receiver rests. Kept in the database, not per instance, so that every portal
// instance lets a black-holed receiver rest, not each probing it once per rest of its own.
import type { Kysely, Migration } from 'kysely';

export const webhookReceiverRests: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable('webhooks')
      .addColumn('unanswered', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('webhooks').addColumn('rest_until', 'text').execute();
  },
};
