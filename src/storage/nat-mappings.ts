// Queries on `nat_mappings`: which NAT mapping each node had in force from when. A row is added
// when a node reports a mapping that differs from the last one recorded for it, and `none` when a
// node taken out of the configuration still translated; old rows stay, so attribution at an old
// moment reads the mapping of that moment.
import type { ExpressionBuilder } from 'kysely';
import type { NatSettings } from '../net/deterministic-nat.js';
import type { NodeNumber } from '../shared/ids.js';
import { formatAtom } from '../shared/time.js';
import { inBatches, neverStopping, type Stopping } from './batches.js';
import type { Db } from './database.js';
import { lockForTransaction } from './exclusive.js';
import { settledNatDates } from './nat-dates.js';
import type { Database } from './schema.js';

/** How a node translates its clients' IPv4 traffic. */
export type NatMapping =
  | { readonly mode: 'none' }
  | { readonly mode: 'masquerade' }
  | { readonly mode: 'deterministic'; readonly settings: NatSettings };

export interface RecordedNatMapping {
  readonly nodeNumber: NodeNumber;
  /** From when (ATOM). */
  readonly appliedAt: string;
  readonly mapping: NatMapping;
}

/** Two mappings that translate alike (the settings compared in the order given: callers pass canonical ones). */
export function sameNatMapping(a: NatMapping, b: NatMapping): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Records `entry` unless the node's last recorded mapping is the same; the entry as recorded
 * (its moment clamped, below) when it was added, else null. Run in a transaction: on PostgreSQL
 * it first takes the node's transaction lock, so two portal instances that read the same change
 * record it once (the key (node, applied_at) settles it too when both read the same date);
 * SQLite's write transactions run one at a time anyway.
 *
 * The node's clock says when it applied the mapping, within limits the portal sets: not after
 * `recordedAt` (a date in the future would refuse every real change until then), and not before
 * the node's last recorded change (that change stays the earlier one: the moment becomes the
 * second after it) nor, for a first mapping, before `notBefore` (when the portal first heard from
 * the node: a backdated report would rewrite the past). A recorded change dated after
 * `recordedAt` (the portal's clock went back since, or a row from before these limits) is moved
 * back first (settleNatMappingDates): left there, it would push this change into the future too,
 * and until then every look-up would read the mapping before both.
 */
export async function recordNatMapping(
  db: Db,
  entry: RecordedNatMapping,
  recordedAt: string,
  notBefore?: string,
): Promise<RecordedNatMapping | null> {
  await lockForTransaction(db, `nat-mapping:${entry.nodeNumber}`);
  const found = await lastNatMapping(db, entry.nodeNumber);
  if (found === undefined ? entry.mapping.mode === 'none' : sameNatMapping(found.mapping, entry.mapping)) return null;
  let last = found;
  if (found !== undefined && found.appliedAt > recordedAt) {
    await settleNatMappingDates(db, entry.nodeNumber, recordedAt);
    last = await lastNatMapping(db, entry.nodeNumber);
  }
  const lowest = last === undefined ? notBefore : formatAtom(new Date(Date.parse(last.appliedAt) + 1000));
  const latest = entry.appliedAt > recordedAt ? recordedAt : entry.appliedAt;
  const appliedAt = lowest !== undefined && latest < lowest ? lowest : latest;
  const recorded = { ...entry, appliedAt };
  const settings = entry.mapping.mode === 'deterministic' ? entry.mapping.settings : null;
  const result = await db
    .insertInto('nat_mappings')
    .values({
      node_number: entry.nodeNumber,
      applied_at: appliedAt,
      mode: entry.mapping.mode,
      ranges: settings === null ? null : JSON.stringify(settings.ranges),
      public_addresses: settings === null ? null : JSON.stringify(settings.publicAddresses),
      ports_per_client: settings?.portsPerClient ?? null,
      recorded_at: recordedAt,
    })
    .onConflict((conflict) => conflict.columns(['node_number', 'applied_at']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0 ? recorded : null;
}

/**
 * Moves the node's changes dated after `now` back to dates it can vouch for (settledNatDates);
 * answers how many moved. Run under the node's lock, in a transaction.
 */
export async function settleNatMappingDates(db: Db, nodeNumber: NodeNumber, now: string): Promise<number> {
  const rows = await db
    .selectFrom('nat_mappings')
    .select(['applied_at', 'recorded_at'])
    .where('node_number', '=', nodeNumber)
    .orderBy('applied_at')
    .execute();
  const settled = settledNatDates(
    rows.map((row) => ({ appliedAt: row.applied_at, recordedAt: row.recorded_at })),
    now,
  );
  let moved = 0;
  // Oldest first: each date only moves back, and stays after the one before, so no two rows meet.
  for (const [index, row] of rows.entries()) {
    const appliedAt = settled[index];
    if (appliedAt === undefined || appliedAt === row.applied_at) continue;
    await db
      .updateTable('nat_mappings')
      .set({ applied_at: appliedAt })
      .where('node_number', '=', nodeNumber)
      .where('applied_at', '=', row.applied_at)
      .execute();
    moved++;
  }
  return moved;
}

/** The node's last recorded mapping, if any. */
export async function lastNatMapping(db: Db, nodeNumber: NodeNumber): Promise<RecordedNatMapping | undefined> {
  const row = await db
    .selectFrom('nat_mappings')
    .selectAll()
    .where('node_number', '=', nodeNumber)
    .orderBy('applied_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : toRecorded(row);
}

/** The node's mapping in force at `at` (ATOM): its last one applied at or before it, if any. */
export async function natMappingOfNodeAt(
  db: Db,
  nodeNumber: NodeNumber,
  at: string,
): Promise<RecordedNatMapping | undefined> {
  const row = await db
    .selectFrom('nat_mappings')
    .selectAll()
    .where('node_number', '=', nodeNumber)
    .where('applied_at', '<=', at)
    .orderBy('applied_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : toRecorded(row);
}

/** Every node's mapping in force at `at` (ATOM): its last one applied at or before it. */
export async function natMappingsInForce(db: Db, at: string): Promise<RecordedNatMapping[]> {
  const rows = await db
    .selectFrom('nat_mappings as mapping')
    .selectAll()
    .where('mapping.applied_at', '=', (eb) =>
      eb
        .selectFrom('nat_mappings as earlier')
        .select((inner) => inner.fn.max('earlier.applied_at').as('applied_at'))
        .whereRef('earlier.node_number', '=', 'mapping.node_number')
        .where('earlier.applied_at', '<=', at),
    )
    .orderBy('mapping.node_number')
    .execute();
  return rows.map(toRecorded);
}

/**
 * The nodes not in `configured` whose last recorded mapping translates (is not `none`): nodes
 * taken out of the configuration whose mapping would otherwise stay in force for ever. Every
 * node when `configured` is empty.
 */
export async function nodesTranslatingOff(db: Db, configured: readonly NodeNumber[]): Promise<NodeNumber[]> {
  let query = db
    .selectFrom('nat_mappings as mapping')
    .select('mapping.node_number')
    .where('mapping.mode', '<>', 'none')
    .where('mapping.applied_at', '=', (eb) =>
      eb
        .selectFrom('nat_mappings as later')
        .select((inner) => inner.fn.max('later.applied_at').as('applied_at'))
        .whereRef('later.node_number', '=', 'mapping.node_number'),
    );
  if (configured.length > 0) query = query.where('mapping.node_number', 'not in', configured);
  const rows = await query.orderBy('mapping.node_number').execute();
  return rows.map((row) => row.node_number as NodeNumber);
}

/** A node's history, oldest first. */
export async function natMappingHistory(db: Db, nodeNumber: NodeNumber): Promise<RecordedNatMapping[]> {
  const rows = await db
    .selectFrom('nat_mappings')
    .selectAll()
    .where('node_number', '=', nodeNumber)
    .orderBy('applied_at')
    .execute();
  return rows.map(toRecorded);
}

function toRecorded(row: {
  node_number: number;
  applied_at: string;
  mode: string;
  ranges: string | null;
  public_addresses: string | null;
  ports_per_client: number | null;
}): RecordedNatMapping {
  const base = { nodeNumber: row.node_number as NodeNumber, appliedAt: row.applied_at };
  if (row.mode === 'deterministic') {
    return {
      ...base,
      mapping: {
        mode: 'deterministic',
        settings: {
          ranges: JSON.parse(row.ranges ?? '[]') as string[],
          publicAddresses: JSON.parse(row.public_addresses ?? '[]') as string[],
          portsPerClient: row.ports_per_client ?? 0,
        },
      },
    };
  }
  return { ...base, mapping: { mode: row.mode === 'masquerade' ? 'masquerade' : 'none' } };
}

/**
 * Deletes the mappings nothing kept can need: those a later mapping of the same node replaced at
 * or before `before` (the one in force at `before` stays), unless a session of that node still in
 * the history was open at some moment of their time. The housekeeping runs this after the history's
 * own pruning, so those are the sessions kept: one that began under an old mapping and ended
 * within the retention (or is still open) keeps that mapping, and a report of any moment of it is
 * still read through the mapping of that moment. While any user is under a legal hold nothing
 * goes, since the held sessions may need the mapping of their time; `held` then says how many
 * would have gone.
 */
export async function pruneNatMappings(
  db: Db,
  before: string,
  heldUsers: readonly string[],
  stopping: Stopping = neverStopping,
): Promise<{ readonly removed: number; readonly held: number }> {
  if (heldUsers.length > 0) {
    const row = await db
      .selectFrom('nat_mappings')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where(unneededBefore(before))
      .executeTakeFirst();
    return { removed: 0, held: Number(row?.count ?? 0) };
  }
  const removed = await inBatches(async (limit) => {
    const result = await natPruningQuery(db, before, limit).executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
  return { removed, held: 0 };
}

/**
 * One batch of pruneNatMappings: at most `limit` rows, deleted by their key (node, applied_at).
 * Each mapping's successor is read by that key, and the sessions of its time by the history's
 * index of a node's sessions by start (0053): a table of millions of sessions is never walked.
 */
export function natPruningQuery(db: Db, before: string, limit: number) {
  return db
    .deleteFrom('nat_mappings')
    .where((eb) =>
      eb(
        eb.refTuple('node_number', 'applied_at'),
        'in',
        eb
          .selectFrom('nat_mappings')
          .select(['node_number', 'applied_at'])
          .where(unneededBefore(before))
          .limit(limit)
          .$asTuple('node_number', 'applied_at'),
      ),
    );
}

/**
 * A mapping replaced at or before `before` that no session in the history overlaps: a mapping
 * is in force from its `applied_at` through the second of the node's next one's, and a session of
 * the node that began before that end (or in its second) and ended at or after that start (or is
 * still open) was under it.
 */
function unneededBefore(before: string) {
  return (eb: ExpressionBuilder<Database, 'nat_mappings'>) => {
    const replacedAt = eb
      .selectFrom('nat_mappings as later')
      .select((inner) => inner.fn.min('later.applied_at').as('applied_at'))
      .whereRef('later.node_number', '=', 'nat_mappings.node_number')
      .whereRef('later.applied_at', '>', 'nat_mappings.applied_at');
    // One such session, or null: a scalar subquery rather than NOT EXISTS, which PostgreSQL may
    // turn into a join that reads the whole index; this one is a probe per mapping. The latest to
    // start first: one that began in the mapping's time is the answer at once.
    const sessionOfItsTime = eb
      .selectFrom('connection_log as session')
      .select('session.node_number')
      .whereRef('session.node_number', '=', 'nat_mappings.node_number')
      // A session that began in the second of the replacement counts: the old mapping was in
      // force for part of that second, and attribution reads that second through both.
      .where('session.connected_at', '<=', replacedAt)
      .where((inner) =>
        inner.or([
          inner('session.disconnected_at', 'is', null),
          inner('session.disconnected_at', '>=', inner.ref('nat_mappings.applied_at')),
        ]),
      )
      .orderBy('session.connected_at', 'desc')
      .limit(1);
    return eb.and([eb(replacedAt, '<=', before), eb(sessionOfItsTime, 'is', null)]);
  };
}
