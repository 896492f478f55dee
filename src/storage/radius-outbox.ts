// Queries on `radius_outbox`: Accounting-Requests not yet acknowledged, one row per record and
// server. A row is written in the transaction of the session change it reports
// (src/listeners/radius-accounting.ts), claimed for one transmission under a lease by one portal
// instance (a conditional update: exactly one instance wins it, on SQLite and on PostgreSQL),
// and deleted when the server answered or when it is dropped as too old.
import { sql, type ExpressionBuilder } from 'kysely';
import { inBatches, neverStopping, type Stopping } from './batches.js';
import type { Db } from './database.js';
import type { Database, RadiusOutboxTable } from './schema.js';

export interface OutboxRecord {
  readonly recordId: string;
  /** `HOST:PORT` of the server it is for. */
  readonly server: string;
  readonly acctSessionId: string;
  readonly connectionId: string;
  /** The tunnel address the record reports (IPv4, else IPv6); null when it reports none. */
  readonly address: string | null;
  /** JSON of src/protocol/radius.ts's AccountingRecord. */
  readonly record: string;
  readonly eventAt: string;
  readonly attempts: number;
  readonly nextAttemptAt: string;
  readonly leaseUntil: string | null;
  readonly leaseToken: string | null;
}

export type NewOutboxRecord = Pick<
  OutboxRecord,
  'recordId' | 'server' | 'acctSessionId' | 'connectionId' | 'address' | 'record' | 'eventAt'
>;

export async function insertOutboxRecords(db: Db, records: readonly NewOutboxRecord[]): Promise<void> {
  if (records.length === 0) return;
  await db
    .insertInto('radius_outbox')
    .values(
      records.map((record) => ({
        record_id: record.recordId,
        server: record.server,
        acct_session_id: record.acctSessionId,
        connection_id: record.connectionId,
        address: record.address,
        record: record.record,
        event_at: record.eventAt,
        attempts: 0,
        next_attempt_at: record.eventAt,
        lease_until: null,
        lease_token: null,
      })),
    )
    .execute();
}

/** Due at `now` and not under a live lease: what dueOutboxRecords lists and claimOutboxRecord takes. */
function dueAndUnheld(now: string) {
  return (where: ExpressionBuilder<Database, 'radius_outbox'>) =>
    where.and([
      where('next_attempt_at', '<=', now),
      where.or([where('lease_until', 'is', null), where('lease_until', '<=', now)]),
    ]);
}

/** Records due at `now` that nobody holds, oldest first, at most `limit`. */
export async function dueOutboxRecords(
  db: Db,
  now: string,
  limit: number,
): Promise<{ recordId: string; server: string }[]> {
  const rows = await db
    .selectFrom('radius_outbox')
    .select(['record_id', 'server'])
    .where(dueAndUnheld(now))
    .orderBy('next_attempt_at')
    .orderBy('record_id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ recordId: row.record_id, server: row.server }));
}

/** Takes the record for one transmission when it is still due and unheld: counts the attempt and sets the lease. */
export async function claimOutboxRecord(
  db: Db,
  recordId: string,
  now: string,
  lease: { readonly until: string; readonly token: string },
): Promise<OutboxRecord | undefined> {
  const row = await db
    .updateTable('radius_outbox')
    .set({ lease_until: lease.until, lease_token: lease.token, attempts: sql<number>`attempts + 1` })
    .where('record_id', '=', recordId)
    .where(dueAndUnheld(now))
    .returningAll()
    .executeTakeFirst();
  return row === undefined ? undefined : toRecord(row);
}

/** The server answered, or the record is dropped: gone, when the lease was still this holder's. */
export async function removeOutboxRecord(db: Db, recordId: string, leaseToken: string): Promise<boolean> {
  const result = await db
    .deleteFrom('radius_outbox')
    .where('record_id', '=', recordId)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * No answer: the record is due again at `nextAttemptAt`, and the lease ends. `cutOff`: the portal
 * stopped the transmission, which then does not count as an attempt.
 */
export async function postponeOutboxRecord(
  db: Db,
  recordId: string,
  leaseToken: string,
  nextAttemptAt: string,
  options: { readonly cutOff?: boolean } = {},
): Promise<boolean> {
  const result = await db
    .updateTable('radius_outbox')
    .set({
      next_attempt_at: nextAttemptAt,
      lease_until: null,
      lease_token: null,
      ...(options.cutOff === true ? { attempts: sql<number>`attempts - 1` } : {}),
    })
    .where('record_id', '=', recordId)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Whether the outbox holds, for `record`'s server, records made before it (ids are ordered as
 * they were made) of its session or of another session on its address, waiting or being sent:
 * `record` waits for them. So no server hears a session's Start or Interim-Update after its Stop,
 * nor the next session's Start on an address before the Stop of the session that had it before.
 * Only earlier ones: two records that each waited for the other would never go. Answers the
 * latest time one of them is due again (none goes before then), null when there are none.
 */
export async function heldBackUntil(
  db: Db,
  record: Pick<OutboxRecord, 'recordId' | 'server' | 'acctSessionId' | 'address'>,
): Promise<string | null> {
  const earlier = db
    .selectFrom('radius_outbox')
    .select((eb) => eb.fn.max('next_attempt_at').as('latest'))
    .where('server', '=', record.server)
    .where('record_id', '<', record.recordId);
  // Two look-ups, each along its own index (radius_outbox_session, radius_outbox_address).
  const ofSession = (await earlier.where('acct_session_id', '=', record.acctSessionId).executeTakeFirst())?.latest;
  const ofAddress =
    record.address === null ? null : (await earlier.where('address', '=', record.address).executeTakeFirst())?.latest;
  const latest = [ofSession, ofAddress].filter((time): time is string => typeof time === 'string').sort();
  return latest.at(-1) ?? null;
}

/**
 * The latest id among the records still queued for `server` of `acctSessionId` or of `address`:
 * a record queued now takes an id after it, so it is sent after them whatever the clocks of the
 * instances that queued them say. Null when there are none.
 */
export async function latestQueuedRecordId(
  db: Db,
  server: string,
  acctSessionId: string,
  address: string | null,
): Promise<string | null> {
  const latest = db
    .selectFrom('radius_outbox')
    .select((eb) => eb.fn.max('record_id').as('latest'))
    .where('server', '=', server);
  // Two look-ups, each along its own index (radius_outbox_session, radius_outbox_address).
  const ofSession = (await latest.where('acct_session_id', '=', acctSessionId).executeTakeFirst())?.latest;
  const ofAddress = address === null ? null : (await latest.where('address', '=', address).executeTakeFirst())?.latest;
  const ids = [ofSession, ofAddress].filter((id): id is string => typeof id === 'string').sort();
  return ids.at(-1) ?? null;
}

export async function findOutboxRecord(db: Db, recordId: string): Promise<OutboxRecord | undefined> {
  const row = await db.selectFrom('radius_outbox').selectAll().where('record_id', '=', recordId).executeTakeFirst();
  return row === undefined ? undefined : toRecord(row);
}

/** Records waiting for an answer, per server: the outbox's size. */
export async function countOutboxRecords(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('radius_outbox')
    .select(['server', db.fn.countAll<number | string>().as('count')])
    .groupBy('server')
    .execute();
  return new Map(rows.map((row) => [row.server, Number(row.count)]));
}

function toRecord(row: RadiusOutboxTable): OutboxRecord {
  return {
    recordId: row.record_id,
    server: row.server,
    acctSessionId: row.acct_session_id,
    connectionId: row.connection_id,
    address: row.address,
    record: row.record,
    eventAt: row.event_at,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    leaseUntil: row.lease_until,
    leaseToken: row.lease_token,
  };
}

/**
 * Deletes the records of events before `before` that nobody sends any more: the daily
 * housekeeping's share, for the records of servers no longer configured (accounting.radius turned
 * off, a server taken out). The records of `sentServers` are the worker's, however old: it sends
 * each at least once and drops it with an audit row after maxAge; deleted here, one queued after an
 * outage longer than maxAge would vanish unsent and without a trace.
 */
export async function pruneRadiusOutbox(
  db: Db,
  before: string,
  sentServers: readonly string[],
  stopping: Stopping = neverStopping,
): Promise<number> {
  // In batches (src/storage/batches.ts): a backlog in one statement could outrun its time limit.
  return inBatches(async (limit) => {
    const result = await radiusOutboxPruningQuery(db, before, sentServers, limit).executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
}

/** One batch of pruneRadiusOutbox: up to `limit` records of events before `before`, found by the event_at index. */
export function radiusOutboxPruningQuery(db: Db, before: string, sentServers: readonly string[], limit: number) {
  let old = db.selectFrom('radius_outbox').select('record_id').where('event_at', '<', before);
  if (sentServers.length > 0) old = old.where('server', 'not in', sentServers);
  return db.deleteFrom('radius_outbox').where('record_id', 'in', old.limit(limit));
}
