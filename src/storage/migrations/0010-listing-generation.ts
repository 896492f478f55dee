// The listing generation: a counter every change to users or configurations moves forward, in
// its own transaction, so a portal instance can serve an unchanged large listing from memory
// and know, from one cheap read, when it no longer may (src/core/listings/cache.ts). Sixteen
// rows, of which a change moves one: concurrent changes on PostgreSQL seldom wait for each
// other's row lock. Numbered 0010: 0007–0009 belong to the webhook and device work.
import { sql, type Kysely, type Migration } from 'kysely';

export const LISTING_GENERATION_SHARDS = 16;

export const listingGenerationSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('listing_generation')
      .addColumn('shard', 'integer', (column) => column.primaryKey())
      .addColumn('generation', 'bigint', (column) => column.notNull())
      .execute();
    const shards = Array.from({ length: LISTING_GENERATION_SHARDS }, (_, shard) => sql`(${shard}, 0)`);
    await sql`INSERT INTO listing_generation (shard, generation) VALUES ${sql.join(shards)}`.execute(db);
  },
};
