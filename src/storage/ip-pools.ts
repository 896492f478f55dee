// Address pools (`ip_pools`, `ip_pool_free`): allocation costs the same whether the range
// is empty or nearly full. A pool hands out the lowest index given back before, else the
// next never-used one — the same addresses, in the same order, as scanning for the first
// free candidate (reference §6.2) would, without reading the peers.
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { NodeNumber, ProfileId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { isPostgres } from './database.js';
import { preparedQuery, type Slot } from './prepared-query.js';
import type { Database } from './schema.js';

export interface PoolKey {
  readonly profileId: ProfileId;
  readonly nodeNumber: NodeNumber;
  readonly rangeFour: string;
  readonly rangeSix: string;
}

/** Takes the lowest free index below `capacity`, or returns null when the pool is full. Call inside a transaction. */
export async function takePoolIndex(
  trx: Transaction<Database>,
  key: PoolKey,
  capacity: number,
): Promise<number | null> {
  // The lowest given-back index first. On PostgreSQL, where several portal instances allocate
  // at once, the candidate row is locked and rows other transactions hold are skipped (FOR
  // UPDATE SKIP LOCKED): two instances never take the same index, and neither waits for the
  // other. SQLite runs one writer at a time, so there is no one to skip.
  if (isPostgres(trx)) {
    const taken = await takeOnPostgres(trx, key, capacity);
    if (taken !== undefined) return taken;
  } else {
    const [reused] = (await takeGivenBackOnSqlite(trx, key)).rows;
    if (reused !== undefined) return reused.pool_index;
    const advanced = await advancePool(trx, key, capacity);
    if (advanced !== undefined) return advanced;
  }
  await ensurePoolRow(trx, key);
  return (await advancePool(trx, key, capacity)) ?? null;
}

/**
 * First allocation in a pool: creates its row. Two first allocations racing each other both
 * insert; the loser's insert does nothing and its advance then succeeds.
 */
export async function ensurePoolRow(trx: Transaction<Database>, key: PoolKey): Promise<void> {
  await trx
    .insertInto('ip_pools')
    .values({
      profile_id: key.profileId,
      node_number: key.nodeNumber,
      range_four: key.rangeFour,
      range_six: key.rangeSix,
      next_index: 0,
    })
    .onConflict((conflict) => conflict.columns(['profile_id', 'node_number', 'range_four', 'range_six']).doNothing())
    .execute();
}

/**
 * PostgreSQL: the given-back index or the next new one in one statement (one round trip of the
 * create's few): the DELETE takes the lowest given-back row it can lock, the UPDATE advances
 * the pool only when it took none, and a pool without its row yet gets it with index 0.
 * undefined: none (the pool is full, or another transaction is making its row).
 */
async function takeOnPostgres(trx: Transaction<Database>, key: PoolKey, capacity: number): Promise<number | undefined> {
  const { rows } = await sql<{ pool_index: number }>`
    WITH ${takingOnPostgres(key, capacity)}
    SELECT pool_index FROM taken`.execute(trx);
  return rows[0]?.pool_index;
}

/**
 * The common table expressions of taking an index on PostgreSQL, ending with `taken` (at most one
 * row, its `pool_index`): for a statement that goes on to use the index (src/storage/new-peer.ts).
 * A pool's first index makes its row (`opened`): the UPDATE before it sees no row, and the
 * INSERT meets the row there was, or the one this statement just updated, and does nothing.
 * No row when another transaction is making the pool's row at that moment: the caller then
 * makes sure of it (ensurePoolRow) and tries again. `onlyIf`: no index is taken unless it holds
 * (read before the pool's row is locked).
 */
export function takingOnPostgres(
  key: PoolKey,
  capacity: number,
  onlyIf: RawBuilder<boolean> = sql`true`,
): RawBuilder<unknown> {
  return sql`reused AS (
      DELETE FROM ip_pool_free
      WHERE profile_id = ${key.profileId} AND node_number = ${key.nodeNumber} AND range_four = ${key.rangeFour} AND range_six = ${key.rangeSix}
        AND ${onlyIf} AND pool_index = (
          SELECT pool_index FROM ip_pool_free
          WHERE profile_id = ${key.profileId} AND node_number = ${key.nodeNumber} AND range_four = ${key.rangeFour} AND range_six = ${key.rangeSix}
          ORDER BY pool_index LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING pool_index
    ), advanced AS (
      UPDATE ip_pools SET next_index = next_index + 1
      WHERE profile_id = ${key.profileId} AND node_number = ${key.nodeNumber} AND range_four = ${key.rangeFour} AND range_six = ${key.rangeSix}
        AND ${onlyIf} AND next_index < ${capacity} AND NOT EXISTS (SELECT 1 FROM reused)
      RETURNING next_index - 1 AS pool_index
    ), opened AS (
      INSERT INTO ip_pools (profile_id, node_number, range_four, range_six, next_index)
      SELECT ${key.profileId}, ${key.nodeNumber}, ${key.rangeFour}, ${key.rangeSix}, 1 WHERE ${onlyIf} AND ${capacity} > 0
      ON CONFLICT (profile_id, node_number, range_four, range_six) DO NOTHING
      RETURNING 0 AS pool_index
    ), taken AS (
      SELECT pool_index FROM reused UNION ALL SELECT pool_index FROM advanced UNION ALL SELECT pool_index FROM opened
    )`;
}

/** SQLite: deletes the lowest given-back index and returns it (no row: none was given back). */
const takeGivenBackOnSqlite = preparedQuery((db, value: Slot<PoolKey>) =>
  db
    .deleteFrom('ip_pool_free')
    .where('profile_id', '=', value('profileId'))
    .where('node_number', '=', value('nodeNumber'))
    .where('range_four', '=', value('rangeFour'))
    .where('range_six', '=', value('rangeSix'))
    .where('pool_index', '=', (eb) =>
      eb
        .selectFrom('ip_pool_free')
        .select('pool_index')
        .where('profile_id', '=', value('profileId'))
        .where('node_number', '=', value('nodeNumber'))
        .where('range_four', '=', value('rangeFour'))
        .where('range_six', '=', value('rangeSix'))
        .orderBy('pool_index')
        .limit(1),
    )
    .returning('pool_index'),
);

/** Increments the pool's next index (the UPDATE takes the row lock, so writers queue here). */
async function advancePool(trx: Transaction<Database>, key: PoolKey, capacity: number): Promise<number | undefined> {
  const [advanced] = (await advancePoolRow(trx, { ...key, capacity })).rows;
  return advanced === undefined ? undefined : advanced.next_index - 1;
}

const advancePoolRow = preparedQuery((db, value: Slot<PoolKey & { capacity: number }>) =>
  db
    .updateTable('ip_pools')
    .set((eb) => ({ next_index: eb('next_index', '+', 1) }))
    .where('profile_id', '=', value('profileId'))
    .where('node_number', '=', value('nodeNumber'))
    .where('range_four', '=', value('rangeFour'))
    .where('range_six', '=', value('rangeSix'))
    .where('next_index', '<', value('capacity'))
    .returning('next_index'),
);

/** Gives indexes back so the next allocations reuse them (the lowest first). */
export async function releasePoolIndexes(
  trx: Transaction<Database>,
  key: PoolKey,
  indexes: readonly number[],
): Promise<void> {
  for (const group of sizeLimitedGroups(indexes, () => 1, RELEASED_PER_STATEMENT)) {
    await trx
      .insertInto('ip_pool_free')
      .values(
        group.map((index) => ({
          profile_id: key.profileId,
          node_number: key.nodeNumber,
          range_four: key.rangeFour,
          range_six: key.rangeSix,
          pool_index: index,
        })),
      )
      .onConflict((conflict) => conflict.doNothing())
      .execute();
  }
}

/** Indexes given back per statement: five parameters each, far below both dialects' limits. */
const RELEASED_PER_STATEMENT = 500;

/** Whether any WireGuard address was ever handed out on the node (deleted configurations count). */
export async function hasAllocatedOnNode(
  db: Kysely<Database> | Transaction<Database>,
  nodeNumber: NodeNumber,
): Promise<boolean> {
  const row = await db
    .selectFrom('ip_pools')
    .select('node_number')
    .where('node_number', '=', nodeNumber)
    .where('next_index', '>', 0)
    .executeTakeFirst();
  return row !== undefined;
}

/** Rows of one multi-row statement: well inside both databases' limits on parameters. */
const ADOPT_ROWS = 1000;

/**
 * Marks indexes as taken by configurations brought from another server (the eduVPN import), so
 * the pool goes on after them: `next_index` becomes the highest taken index + 1, and every index
 * below it that nothing holds is a given-back one, taken lowest first by the next create. Call
 * in the transaction that inserts those configurations.
 */
export async function adoptPoolIndexes(
  trx: Transaction<Database>,
  key: PoolKey,
  indexes: readonly number[],
): Promise<void> {
  if (indexes.length === 0) return;
  await ensurePoolRow(trx, key);
  let read = trx
    .selectFrom('ip_pools')
    .select('next_index')
    .where('profile_id', '=', key.profileId)
    .where('node_number', '=', key.nodeNumber)
    .where('range_four', '=', key.rangeFour)
    .where('range_six', '=', key.rangeSix);
  if (isPostgres(trx)) read = read.forUpdate();
  const before = (await read.executeTakeFirstOrThrow()).next_index;
  const taken = new Set(indexes);
  const next = Math.max(before, indexes.reduce((highest, index) => Math.max(highest, index), -1) + 1);
  const poolRows = (slice: readonly number[]) =>
    slice.map((index) => ({
      profile_id: key.profileId,
      node_number: key.nodeNumber,
      range_four: key.rangeFour,
      range_six: key.rangeSix,
      pool_index: index,
    }));
  for (const slice of sizeLimitedGroups(
    indexes.filter((index) => index < before),
    () => 1,
    ADOPT_ROWS,
  )) {
    await trx
      .deleteFrom('ip_pool_free')
      .where('profile_id', '=', key.profileId)
      .where('node_number', '=', key.nodeNumber)
      .where('range_four', '=', key.rangeFour)
      .where('range_six', '=', key.rangeSix)
      .where('pool_index', 'in', slice)
      .execute();
  }
  const holes: number[] = [];
  for (let index = before; index < next; index++) if (!taken.has(index)) holes.push(index);
  for (const slice of sizeLimitedGroups(holes, () => 1, ADOPT_ROWS)) {
    await trx
      .insertInto('ip_pool_free')
      .values(poolRows(slice))
      .onConflict((conflict) => conflict.doNothing())
      .execute();
  }
  await trx
    .updateTable('ip_pools')
    .set({ next_index: next })
    .where('profile_id', '=', key.profileId)
    .where('node_number', '=', key.nodeNumber)
    .where('range_four', '=', key.rangeFour)
    .where('range_six', '=', key.rangeSix)
    .execute();
}
