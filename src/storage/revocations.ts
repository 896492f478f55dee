// Queries on `revocations`: one row per revocation receipt (src/core/revocations/receipts.ts). Its
// state moves only by conditional updates (pending → overdue, pending or overdue → applied or
// superseded), so of several portal instances exactly one wins each move and announces it.
import { asUserId, type ProfileId, type UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { inBatches, neverStopping, type Stopping } from './batches.js';
import type { Db } from './database.js';
import type { RetentionCount } from './legal-holds.js';
import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import type { Database, RevocationsTable } from './schema.js';

export const REVOCATION_STATES = ['pending', 'overdue', 'applied', 'superseded'] as const;
export type RevocationState = (typeof REVOCATION_STATES)[number];
/** Still waiting for a node: not yet applied, not superseded. */
export const OPEN_REVOCATION_STATES: readonly RevocationState[] = ['pending', 'overdue'];
/** What revoked: the call, an expiry, or a device's new configuration replacing its old one. */
export type RevocationReason =
  | 'disable_user'
  | 'destroy'
  | 'delete_connection'
  | 'retire_device'
  | 'suspend_device'
  | 'replaced'
  | 'expiry';

export interface StoredRevocation {
  readonly revocationId: string;
  readonly userId: UserId;
  readonly reason: RevocationReason;
  readonly state: RevocationState;
  readonly requestedAt: string;
  readonly overdueAt: string | null;
  readonly appliedAt: string | null;
  readonly supersededAt: string | null;
}

export async function insertRevocation(
  db: Db,
  revocation: Pick<StoredRevocation, 'revocationId' | 'userId' | 'reason' | 'requestedAt'>,
): Promise<void> {
  await db
    .insertInto('revocations')
    .values({
      revocation_id: revocation.revocationId,
      user_id: revocation.userId,
      reason: revocation.reason,
      state: 'pending',
      requested_at: revocation.requestedAt,
      overdue_at: null,
      applied_at: null,
      superseded_at: null,
    })
    .execute();
}

/** The receipt's row as a statement, for a change's closing writes in one statement (src/storage/closing-writes.ts). */
export function revocationInsert(
  revocation: Pick<StoredRevocation, 'revocationId' | 'userId' | 'reason' | 'requestedAt'>,
): RawBuilder<unknown> {
  return sql`INSERT INTO revocations (revocation_id, user_id, reason, state, requested_at, overdue_at, applied_at, superseded_at)
    VALUES (${revocation.revocationId}, ${revocation.userId}, ${revocation.reason}, 'pending', ${revocation.requestedAt}, NULL, NULL, NULL)`;
}

export async function findRevocation(db: Db, revocationId: string): Promise<StoredRevocation | undefined> {
  const row = await db
    .selectFrom('revocations')
    .selectAll()
    .where('revocation_id', '=', revocationId)
    .executeTakeFirst();
  return row === undefined ? undefined : toRevocation(row);
}

/**
 * Receipts newest first (ids are time-ordered), from before `beforeId` when given; with
 * `withinProfiles`, only those that took configurations away and all of them in these profiles
 * (what a key limited to them may see), chosen by the database, not page by page here.
 */
export async function listRevocations(
  db: Db,
  filter: {
    readonly states?: readonly RevocationState[];
    readonly userId?: UserId;
    readonly beforeId?: string;
    readonly withinProfiles?: readonly ProfileId[];
    readonly limit: number;
  },
): Promise<StoredRevocation[]> {
  let query = db.selectFrom('revocations').selectAll();
  const profiles = filter.withinProfiles;
  if (profiles !== undefined) {
    if (profiles.length === 0) return [];
    // Both probe revocation_nodes by its primary key, which begins with the receipt's id.
    query = query.where(({ and, exists, not, selectFrom }) =>
      and([
        exists(
          selectFrom('revocation_nodes as own')
            .select('own.node_number')
            .whereRef('own.revocation_id', '=', 'revocations.revocation_id'),
        ),
        not(
          exists(
            selectFrom('revocation_nodes as beyond')
              .select('beyond.node_number')
              .whereRef('beyond.revocation_id', '=', 'revocations.revocation_id')
              .where('beyond.profile_id', 'not in', profiles),
          ),
        ),
      ]),
    );
  }
  if (filter.states !== undefined) query = query.where('state', 'in', filter.states);
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.beforeId !== undefined) query = query.where('revocation_id', '<', filter.beforeId);
  const rows = await query.orderBy('revocation_id', 'desc').limit(filter.limit).execute();
  return rows.map(toRevocation);
}

/** No configuration of the receipt `r` is still pending on a node. */
function nothingPending({ not, exists, selectFrom }: ExpressionBuilder<Database & { r: RevocationsTable }, 'r'>) {
  return not(
    exists(
      selectFrom('revocation_nodes as n')
        .select('n.node_number')
        .whereRef('n.revocation_id', '=', 'r.revocation_id')
        .where('n.applied_at', 'is', null),
    ),
  );
}

/** Pending or overdue receipts none of whose configurations is still pending on a node: ready to be applied. */
export async function revocationsReadyToApply(db: Db, revocationIds?: readonly string[]): Promise<string[]> {
  if (revocationIds !== undefined && revocationIds.length === 0) return [];
  let query = db
    .selectFrom('revocations as r')
    .select('r.revocation_id')
    .where('r.state', 'in', OPEN_REVOCATION_STATES)
    .where(nothingPending);
  if (revocationIds !== undefined) query = query.where('r.revocation_id', 'in', revocationIds);
  return (await query.execute()).map((row) => row.revocation_id);
}

/**
 * Claims pending/overdue → applied for each of `revocationIds` no configuration of which is
 * pending any more, in one statement; answers those it moved (not those another instance, or
 * nothing, moved).
 */
export async function markRevocationsApplied(
  db: Db,
  revocationIds: readonly string[],
  at: string,
): Promise<StoredRevocation[]> {
  if (revocationIds.length === 0) return [];
  const rows = await db
    .updateTable('revocations as r')
    .set({ state: 'applied', applied_at: at })
    .where('r.revocation_id', 'in', revocationIds)
    .where('r.state', 'in', OPEN_REVOCATION_STATES)
    .where(nothingPending)
    .returningAll()
    .execute();
  const order = new Map(revocationIds.map((id, index) => [id, index]));
  return rows.map(toRevocation).sort((a, b) => (order.get(a.revocationId) ?? 0) - (order.get(b.revocationId) ?? 0));
}

/** Receipts still pending that were asked for before `before` (their deadline passed). */
export async function pendingRevocationsRequestedBefore(db: Db, before: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('revocations')
    .select('revocation_id')
    .where('state', '=', 'pending')
    .where('requested_at', '<', before)
    .orderBy('requested_at')
    .limit(limit)
    .execute();
  return rows.map((row) => row.revocation_id);
}

/** Claims pending → overdue; false when another instance did it first or the receipt moved on. */
export async function markRevocationOverdue(db: Db, revocationId: string, at: string): Promise<boolean> {
  // One conditional update: of several portal instances exactly one moves the receipt and announces it.
  const result = await db
    .updateTable('revocations')
    .set({ state: 'overdue', overdue_at: at })
    .where('revocation_id', '=', revocationId)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * enable_user before every node confirmed: the user's open disable_user receipts are superseded
 * (their configurations belong on the nodes again). Deleted or expired configurations do not
 * come back, so those receipts still wait for their nodes.
 */
export async function supersedeRevocationsOfUser(db: Db, userId: UserId, at: string): Promise<number> {
  const result = await db
    .updateTable('revocations')
    .set({ state: 'superseded', superseded_at: at })
    .where('user_id', '=', userId)
    .where('reason', '=', 'disable_user')
    .where('state', 'in', OPEN_REVOCATION_STATES)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A device's suspension receipt still open when the device is resumed: superseded; false when it was not open. */
export async function supersedeRevocation(db: Db, revocationId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('revocations')
    .set({ state: 'superseded', superseded_at: at })
    .where('revocation_id', '=', revocationId)
    .where('reason', '=', 'suspend_device')
    .where('state', 'in', OPEN_REVOCATION_STATES)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** How many receipts are open (pending or overdue), and when the oldest was asked for. */
export async function openRevocationCount(
  db: Db,
): Promise<{ readonly count: number; readonly oldestRequestedAt: string | null }> {
  const row = await db
    .selectFrom('revocations')
    .select((eb) => [eb.fn.countAll<number | string | bigint>().as('count'), eb.fn.min('requested_at').as('oldest')])
    .where('state', 'in', OPEN_REVOCATION_STATES)
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), oldestRequestedAt: row.oldest ?? null };
}

/**
 * Deletes finished receipts (applied, superseded) asked for before `before`, with their node
 * rows (housekeeping, by `auditLogRetention`), in batches (src/storage/batches.ts). Open ones
 * stay: they still say a node may hold a peer.
 */
export async function pruneRevocations(
  db: Db,
  before: string,
  heldUsers: readonly string[] = [],
  stopping: Stopping = neverStopping,
): Promise<RetentionCount> {
  /** The finished receipts asked for before `before`, as a query of `q` (a batch's transaction). */
  const finished = (q: Db) =>
    q.selectFrom('revocations').where('requested_at', '<', before).where('state', 'in', ['applied', 'superseded']);
  /** The receipts to delete: the finished ones of users no hold keeps. */
  const old = (q: Db) => {
    const ids = finished(q).select('revocation_id');
    return heldUsers.length > 0 ? ids.where('user_id', 'not in', heldUsers) : ids;
  };
  let held = 0;
  if (heldUsers.length > 0) {
    const row = await finished(db)
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('user_id', 'in', heldUsers)
      .executeTakeFirstOrThrow();
    held = Number(row.count);
  }
  const removed = await inBatches(
    // One transaction per batch: a receipt goes with its node rows or not at all (one left
    // without them would read as having waited for no node).
    (limit) =>
      db.transaction().execute(async (trx) => {
        // The batch's keys are read once, so both statements name the same receipts.
        const ids = (await old(trx).limit(limit).execute()).map((row) => row.revocation_id);
        if (ids.length === 0) return 0;
        await trx.deleteFrom('revocation_nodes').where('revocation_id', 'in', ids).execute();
        const result = await trx.deleteFrom('revocations').where('revocation_id', 'in', ids).executeTakeFirst();
        return Number(result.numDeletedRows);
      }),
    stopping,
  );
  return { removed, held };
}

function toRevocation(row: RevocationsTable): StoredRevocation {
  return {
    revocationId: row.revocation_id,
    userId: asUserId(row.user_id),
    reason: row.reason as RevocationReason,
    state: row.state as RevocationState,
    requestedAt: row.requested_at,
    overdueAt: row.overdue_at,
    appliedAt: row.applied_at,
    supersededAt: row.superseded_at,
  };
}

/** Ids per statement: far below both dialects' parameter limits. */
const LOOKUP_IDS = 500;

/** Of `userIds`, those a destroy receipt names, each with the time of its latest. */
export async function latestDestroyReceipts(db: Db, userIds: readonly UserId[]): Promise<Map<UserId, string>> {
  const found = new Map<UserId, string>();
  for (const ids of sizeLimitedGroups([...new Set(userIds)], () => 1, LOOKUP_IDS)) {
    const rows = await db
      .selectFrom('revocations')
      .select(['user_id', (eb) => eb.fn.max('requested_at').as('destroyed_at')])
      .where('reason', '=', 'destroy')
      .where('user_id', 'in', ids)
      .groupBy('user_id')
      .execute();
    for (const row of rows) found.set(asUserId(row.user_id), row.destroyed_at);
  }
  return found;
}
