// An index on `radius_outbox.event_at`: the daily housekeeping deletes the records of events
// older than the retention in batches, and without it every batch read the whole outbox (which
// grows by a record per session event and server while a RADIUS server is unreachable).
import type { Kysely, Migration } from 'kysely';

export const radiusOutboxEventAt: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.createIndex('radius_outbox_event_at').on('radius_outbox').column('event_at').execute();
  },
};
