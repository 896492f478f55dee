// Queries on `listing_generation`: the counter that tells a cached listing it is out of date
// (src/core/listings/cache.ts). Moved forward inside the transaction of a change, read with
// the listing; the sum over the shards only ever grows.
import { sql, type RawBuilder } from 'kysely';
import { LISTING_GENERATION_SHARDS } from './migrations/0010-listing-generation.js';
import type { Db } from './database.js';

/** A value of the counter; two reads that give the same value saw the same users and configurations. */
export type ListingGeneration = string & { readonly __listingGeneration: true };

/**
 * The statement that moves the counter forward (by one, or `by`), on a random shard: a change's
 * closing write (src/storage/closing-writes.ts). An upsert, so a shard row that is missing (a
 * hand-edited database) is made rather than the change going unnoticed.
 */
export function listingGenerationBump(by = 1): RawBuilder<unknown> {
  const shard = Math.floor(Math.random() * LISTING_GENERATION_SHARDS);
  return sql`INSERT INTO listing_generation (shard, generation) VALUES (${shard}, ${by})
    ON CONFLICT (shard) DO UPDATE SET generation = listing_generation.generation + ${by}`;
}

export async function readListingGeneration(db: Db): Promise<ListingGeneration> {
  const row = await db
    .selectFrom('listing_generation')
    .select((eb) => eb.fn.sum<string | number | null>('generation').as('generation'))
    .executeTakeFirst();
  return String(row?.generation ?? 0) as ListingGeneration;
}
