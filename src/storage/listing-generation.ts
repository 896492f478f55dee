// Queries on `listing_generation`: the counter that tells a cached listing it is out of date
// (src/core/listings/cache.ts). Moved forward inside the transaction of a change, read with
// the listing; the sum over the shards only ever grows.
import { sql } from 'kysely';
import { LISTING_GENERATION_SHARDS } from './migrations/0010-listing-generation.js';
import type { Db } from './database.js';
import { preparedQuery, type Slot } from './prepared-query.js';

/** A value of the counter; two reads that give the same value saw the same users and configurations. */
export type ListingGeneration = string & { readonly __listingGeneration: true };

/**
 * Moves the counter forward by one, on a random shard. An upsert, so a shard row that is
 * missing (a hand-edited database) is made rather than the change going unnoticed.
 */
export async function bumpListingGeneration(db: Db): Promise<void> {
  await bumpShard(db, { shard: Math.floor(Math.random() * LISTING_GENERATION_SHARDS) });
}

const bumpShard = preparedQuery((db, value: Slot<{ shard: number }>) =>
  db
    .insertInto('listing_generation')
    .values({ shard: value('shard'), generation: 1 })
    .onConflict((conflict) =>
      conflict.column('shard').doUpdateSet({ generation: sql`listing_generation.generation + 1` }),
    ),
);

export async function readListingGeneration(db: Db): Promise<ListingGeneration> {
  const row = await db
    .selectFrom('listing_generation')
    .select((eb) => eb.fn.sum<string | number | null>('generation').as('generation'))
    .executeTakeFirst();
  return String(row?.generation ?? 0) as ListingGeneration;
}
