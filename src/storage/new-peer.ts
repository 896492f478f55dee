// A create's final write: a new WireGuard configuration at the lowest free address of its pool.
// Every create of a pool queues on the pool's row (ip_pools) from the statement that takes an
// index until its commit, so that statement comes last and does all that is left: on
// PostgreSQL one statement takes the index, inserts the configuration with the addresses of
// that index (computed by the server, checked here), journals it for the listings (migration
// 0020) and ends with the change's closing writes (src/storage/closing-writes.ts: the webhook
// outbox's deliveries, the audit row, the listing counter); the row is held for that statement and the commit only. SQLite, one writer at a time and no round trips, runs the
// same steps one by one.
import { sql, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import {
  closingClauses,
  closingStatementParts,
  runClosingWrites,
  type ClosingClause,
  type ClosingWrite,
} from './closing-writes.js';
import type { DeviceId, UserId } from '../shared/ids.js';
import { clientAddressesAt, FIRST_CLIENT_OFFSET, poolCapacity } from '../wireguard/address-pool.js';
import { isPostgres, type Db } from './database.js';
import { isWriteConflict } from './errors.js';
import { ensurePoolRow, takePoolIndex, takingOnPostgres, type PoolKey } from './ip-pools.js';
import type { Database, WireGuardPeersTable } from './schema.js';
import { insertPeer, toPeer, type NewPeer, type WireGuardPeer } from './wg-peers.js';

/** A configuration to store, before its addresses are known. */
export type UnplacedPeer = Omit<NewPeer, 'ipFour' | 'ipSix' | 'poolIndex'> & { readonly deviceId: DeviceId | null };

/**
 * Takes a free index and stores `peer` with its addresses, then runs `closingWrites` (in the
 * same statement on PostgreSQL). null: the pool is full. `peer: null`: a configuration from
 * before a range change holds the index's IPv4 address; the index is used up, try again (with
 * no closing writes: they ran).
 */
export async function insertPeerAtFreeAddress(
  trx: Transaction<Database>,
  pool: PoolKey,
  peer: UnplacedPeer,
  closingWrites: readonly ClosingWrite[],
): Promise<{ readonly peer: WireGuardPeer | null } | null> {
  if (!isPostgres(trx)) {
    const poolIndex = await takePoolIndex(trx, pool, poolCapacity(pool.rangeFour, pool.rangeSix));
    if (poolIndex === null) return null;
    const stored = await insertPeer(trx, {
      ...peer,
      poolIndex,
      ...clientAddressesAt(pool.rangeFour, pool.rangeSix, poolIndex),
    });
    await runClosingWrites(trx, closingWrites);
    return { peer: stored };
  }
  let row = await takeAndInsert(trx, pool, peer, await closingClauses(trx, closingWrites));
  if (row.taken_index === null) {
    // The pool's row is missing (its first allocation) or the pool is full.
    await ensurePoolRow(trx, pool);
    row = await takeAndInsert(trx, pool, peer, []);
    if (row.taken_index === null) return null;
  }
  return { peer: await withPortalAddresses(trx, pool, row) };
}

/** Why a create in one statement gave up, having written nothing; the usual way tells the rest. */
export type GaveUp = 'user-exists' | 'user-missing' | 'not-simple';

/** The user a create in one statement is built for: a new one it makes, or a known one it share-locks. */
export interface UserOfCreate {
  readonly userId: UserId;
  readonly isNew: boolean;
  readonly now: string;
}

/**
 * PostgreSQL: a create in one statement, which the server runs as its own transaction (one
 * round trip): the user made or share-locked (so a disable or destroy of it waits), the index,
 * the configuration, its journal row and the closing writes. Built for the common case, it gives
 * up, writing nothing, when the case is otherwise: the user is not as `user` says, the user is
 * disabled, no address was had (a full pool, a pool's row being made by another transaction, an
 * address held by a configuration from before a range change), or it lost a race (a deadlock):
 * `gaveUp` says which, and the caller tries the other case of the user, or makes the create in
 * a transaction (insertPeerAtFreeAddress), which answers the rest as before.
 */
export async function insertPeerInOneStatement(
  db: Db,
  pool: PoolKey,
  peer: UnplacedPeer,
  user: UserOfCreate,
  closingClauses: readonly ClosingClause[],
): Promise<{ readonly peer: WireGuardPeer } | { readonly gaveUp: GaveUp }> {
  try {
    const row = await takeAndInsert(db, pool, peer, closingClauses, user.isNew ? newUser(user) : knownUser(user));
    const stored = await withPortalAddresses(db, pool, row);
    if (stored === null) throw new Error('the create statement stored no configuration and did not give up');
    return { peer: stored };
  } catch (error) {
    // A deadlock or a unique key taken meanwhile undid the statement too; a transaction retries it.
    if (isWriteConflict(error)) return { gaveUp: 'not-simple' };
    const gaveUp = gaveUpFor(error);
    if (gaveUp === null) throw error;
    return { gaveUp };
  }
}

/** The user inserted; gives up when it was there already. */
function newUser(user: UserOfCreate): Framing {
  return {
    before: sql`made_user AS (
      INSERT INTO users (user_id, created_at, last_seen, auth_data) VALUES (${user.userId}::text, ${user.now}::text, ${user.now}::text, NULL)
      ON CONFLICT (user_id) DO NOTHING
      RETURNING user_id
    )`,
    onlyIf: sql<boolean>`EXISTS (SELECT 1 FROM made_user)`,
    verdict: sql`CASE WHEN NOT EXISTS (SELECT 1 FROM made_user) THEN vpn_portal_give_up(${'user-exists' satisfies GaveUp}::text)
      WHEN peer.public_key IS NULL THEN vpn_portal_give_up(${'not-simple' satisfies GaveUp}::text) ELSE 0 END`,
  };
}

/** The user's row share-locked; gives up when it is missing or disabled. */
function knownUser(user: UserOfCreate): Framing {
  return {
    before: sql`known_user AS (SELECT is_disabled FROM users WHERE user_id = ${user.userId}::text FOR SHARE)`,
    onlyIf: sql<boolean>`EXISTS (SELECT 1 FROM known_user WHERE is_disabled = 0)`,
    verdict: sql`CASE WHEN NOT EXISTS (SELECT 1 FROM known_user) THEN vpn_portal_give_up(${'user-missing' satisfies GaveUp}::text)
      WHEN peer.public_key IS NULL THEN vpn_portal_give_up(${'not-simple' satisfies GaveUp}::text) ELSE 0 END`,
  };
}

/** The reason vpn_portal_give_up was given (migration 0033), or null for any other error. */
function gaveUpFor(error: unknown): GaveUp | null {
  if (typeof error !== 'object' || error === null || (error as { code?: unknown }).code !== 'VP001') return null;
  const reason = (error as { message?: unknown }).message;
  return reason === 'user-exists' || reason === 'user-missing' || reason === 'not-simple' ? reason : null;
}

/**
 * The configuration a create statement stored (null: none, an old configuration holds the
 * index's address). The server's text of an address is the portal's (IPv4 dotted quad, IPv6 as
 * RFC 5952 gives it); should some range ever print differently, the portal's text is what is kept.
 */
async function withPortalAddresses(db: Db, pool: PoolKey, row: TakenRow): Promise<WireGuardPeer | null> {
  if (row.public_key === null || row.taken_index === null) return null;
  const stored = toPeer(row as Selectable<WireGuardPeersTable>);
  const expected = clientAddressesAt(pool.rangeFour, pool.rangeSix, row.taken_index);
  if (stored.ipFour === expected.ipFour && stored.ipSix === expected.ipSix) return stored;
  const [fixed] = await db
    .updateTable('wg_peers')
    .set({ ip_four: expected.ipFour, ip_six: expected.ipSix })
    .where('public_key', '=', stored.publicKey)
    .returningAll()
    .execute();
  return fixed === undefined ? null : toPeer(fixed);
}

type TakenRow = { readonly taken_index: number | null } & {
  readonly [K in keyof Selectable<WireGuardPeersTable>]: Selectable<WireGuardPeersTable>[K] | null;
};

type AnswerRow = TakenRow & { readonly [written: `written_${number}`]: number };

/** What a create statement has before and after its own steps (a one-statement create's user). */
interface Framing {
  /** Common table expressions before the index is taken. */
  readonly before: RawBuilder<unknown> | null;
  /** No index is taken unless it holds. */
  readonly onlyIf: RawBuilder<boolean>;
  /** A column of the answer that gives the statement up (vpn_portal_give_up) when its case is not the one it was built for. */
  readonly verdict: RawBuilder<unknown> | null;
}

const IN_A_TRANSACTION: Framing = { before: null, onlyIf: sql<boolean>`true`, verdict: null };

/**
 * One statement: the index (ip_pools' row lock), the configuration at its addresses, its journal
 * row, then the closing writes. PostgreSQL runs a data-modifying WITH query the main query does
 * not read after the main query, so the closing writes (the listing counter's lock, a change's
 * last) come after the pool's lock. The one the main query does read, the outbox's deliveries
 * (to count them), takes no lock another change waits on (new rows under fresh event ids).
 * Always one row, with a null index when none was taken; the closing writes ran either way
 * (unless the framing's verdict gave the statement up).
 */
async function takeAndInsert(
  db: Db,
  pool: PoolKey,
  peer: UnplacedPeer,
  closingClauses: readonly ClosingClause[],
  framing: Framing = IN_A_TRANSACTION,
): Promise<AnswerRow> {
  const capacity = poolCapacity(pool.rangeFour, pool.rangeSix);
  const closing = closingStatementParts(closingClauses);
  const before = framing.before === null ? sql`` : sql`${framing.before}, `;
  const verdict = framing.verdict === null ? sql`` : sql`, ${framing.verdict} AS verdict`;
  const { rows } = await sql<AnswerRow>`
    WITH ${before}${takingOnPostgres(pool, capacity, framing.onlyIf)}, peer AS (
      INSERT INTO wg_peers (public_key, user_id, profile_id, node_number, display_name, ip_four, ip_six, pool_index,
        created_at, expires_at, auth_key, expiry_warned, revision, device_id)
      SELECT ${peer.publicKey}::text, ${peer.userId}::text, ${peer.profileId}::text, ${peer.nodeNumber}::integer,
        ${peer.displayName}::text,
        host(${pool.rangeFour}::inet + (${FIRST_CLIENT_OFFSET} + pool_index)::bigint),
        host(${pool.rangeSix}::inet + (${FIRST_CLIENT_OFFSET} + pool_index)::bigint),
        pool_index, ${peer.createdAt}::text, ${peer.expiresAt}::text, ${peer.authKey}::text, ${peer.expiryWarned ? 1 : 0}::integer,
        nextval('change_revision'), ${peer.deviceId}::text
      FROM taken
      ON CONFLICT (ip_four) DO NOTHING
      RETURNING *
    ), journal AS (
      INSERT INTO listing_changes (profile_id, created_at, public_key) SELECT profile_id, created_at, public_key FROM peer
    )${closing.clauses.length === 0 ? sql`` : sql`, ${closing.ctes}`}
    SELECT taken.pool_index AS taken_index, peer.*${closing.counts}${verdict}
    FROM (VALUES (1)) AS one (n) LEFT JOIN taken ON true LEFT JOIN peer ON true`.execute(db);
  const [row] = rows;
  if (row === undefined) throw new Error('the create statement answered no row');
  closing.tell(row);
  return row;
}
