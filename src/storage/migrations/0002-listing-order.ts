// The listing index also orders configurations made in the same second (by public key), so
// `connection_list` comes out in one order on SQLite and PostgreSQL alike, straight from the
// index: PostgreSQL keeps no insertion order to fall back on, and sorting 100,000 rows for
// every listing cost it a third of the call.
import type { Kysely, Migration } from 'kysely';

export const listingOrder: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('wg_peers_listing').execute();
    await db.schema
      .createIndex('wg_peers_listing')
      .on('wg_peers')
      .columns(['profile_id', 'created_at', 'public_key'])
      .execute();
  },
};
