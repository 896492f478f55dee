// Queries on `audit_log`: one row per Admin API call that changed something or failed, and one
// per bucket of refusals (the first refusal of a source and a reason in a minute, counting the
// others). Rows are written by the audit listener only (src/listeners/audit-log.ts), in the
// transaction of the change they record.
import { randomUUID } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import { z } from 'zod';
import { countInBatches, inBatches, neverStopping, type Stopping } from './batches.js';
import type { Db } from './database.js';
import type { RetentionCount } from './legal-holds.js';
import { preparedQuery, type Slot } from './prepared-query.js';
import type { AuditLogTable } from './schema.js';
import { sha256Hex } from '../shared/sha256.js';

export interface AuditRecord {
  readonly auditId: string;
  readonly at: string;
  readonly keyName: string | null;
  readonly sourceAddress: string;
  readonly call: string;
  readonly parameters: Readonly<Record<string, string>>;
  readonly status: number;
  readonly userId: string | null;
  readonly connectionIds: readonly string[];
  readonly detail: string | null;
  /** How many more refusals of the row's bucket came after it; 0 for every other row. */
  readonly repeated: number;
}

/** A row as the listener writes it: a refusal's count starts at 0. */
export type NewAuditRecord = Omit<AuditRecord, 'repeated'>;

/** What refusals are coalesced by: one row per minute, source and reason. */
export interface RefusalBucket {
  /** The minute, as its first millisecond. */
  readonly minute: number;
  /** The source address, or the network it stands for (an IPv6 client's /64). */
  readonly source: string;
  readonly reason: string;
}

export interface AuditFilter {
  /** ATOM: entries at or after. */
  readonly since?: string;
  /** ATOM: entries before. */
  readonly until?: string;
  readonly keyName?: string;
  readonly userId?: string;
  /** Entries older than this audit id (the cursor of the page before). */
  readonly before?: string;
  readonly limit: number;
}

let lastMillis = 0;
let counter = 0;

/**
 * A new audit id: 12 hex digits of milliseconds, 4 of a per-process counter, 8 random (a UUIDv4's
 * last, which Node makes from a pool of random bytes: cheaper than a randomBytes call). Ids sort
 * as their rows were written by this process; rows of several instances interleave by time.
 */
export function newAuditId(at: Date): string {
  const millis = Math.max(at.getTime(), lastMillis);
  counter = millis === lastMillis ? counter + 1 : 0;
  lastMillis = millis;
  if (counter > 0xffff) {
    lastMillis = millis + 1;
    counter = 0;
  }
  return `${lastMillis.toString(16).padStart(12, '0')}${counter.toString(16).padStart(4, '0')}${randomUUID().slice(-8)}`;
}

export async function insertAuditRecord(db: Db, record: NewAuditRecord): Promise<void> {
  await insertAuditRow(db, auditRow(record, null));
}

/** The statement that writes `record`: a change's closing write (src/storage/closing-writes.ts). */
export function auditRecordInsert(record: NewAuditRecord): RawBuilder<unknown> {
  const row = auditRow(record, null);
  return sql`INSERT INTO audit_log (audit_id, at, key_name, source_address, call, parameters, status, user_id,
      connection_ids, detail, repeated, refusal_bucket)
    VALUES (${row.auditId}, ${row.at}, ${row.keyName}, ${row.sourceAddress}, ${row.call}, ${row.parameters},
      ${row.status}, ${row.userId}, ${row.connectionIds}, ${row.detail}, 0, NULL)`;
}

/**
 * Writes a refusal as the row of its bucket, or, when the bucket has its row already, counts it
 * into that row's `repeated`. One statement on the bucket's unique key: concurrent refusals,
 * also of other portal instances on the same PostgreSQL, meet in one row and each is counted.
 */
export async function insertOrCountRefusal(db: Db, record: NewAuditRecord, bucket: RefusalBucket): Promise<void> {
  await upsertRefusalRow(db, auditRow(record, refusalBucketKey(bucket)));
}

/** The bucket's key: a hash, so a long reason fits the unique index on both databases. */
function refusalBucketKey(bucket: RefusalBucket): string {
  return sha256Hex(JSON.stringify([bucket.minute, bucket.source, bucket.reason]));
}

type AuditRow = Omit<NewAuditRecord, 'parameters' | 'connectionIds'> & {
  readonly parameters: string;
  readonly connectionIds: string;
  readonly refusalBucket: string | null;
};

function auditRow(record: NewAuditRecord, refusalBucket: string | null): AuditRow {
  return {
    ...record,
    parameters: JSON.stringify(record.parameters),
    connectionIds: JSON.stringify(record.connectionIds),
    refusalBucket,
  };
}

const insertAuditRow = preparedQuery((db, value: Slot<AuditRow>) => auditRowInsert(db, value));

const upsertRefusalRow = preparedQuery((db, value: Slot<AuditRow>) =>
  auditRowInsert(db, value).onConflict((conflict) =>
    conflict.column('refusal_bucket').doUpdateSet({ repeated: sql`audit_log.repeated + 1` }),
  ),
);

function auditRowInsert(db: Db, value: Slot<AuditRow>) {
  return db.insertInto('audit_log').values({
    audit_id: value('auditId'),
    at: value('at'),
    key_name: value('keyName'),
    source_address: value('sourceAddress'),
    call: value('call'),
    parameters: value('parameters'),
    status: value('status'),
    user_id: value('userId'),
    connection_ids: value('connectionIds'),
    detail: value('detail'),
    repeated: 0,
    refusal_bucket: value('refusalBucket'),
  });
}

/** Entries matching the filter, newest first, at most `limit`. */
export async function auditRecords(db: Db, filter: AuditFilter): Promise<AuditRecord[]> {
  let query = db.selectFrom('audit_log').selectAll().orderBy('audit_id', 'desc').limit(filter.limit);
  if (filter.since !== undefined) query = query.where('at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('at', '<', filter.until);
  if (filter.keyName !== undefined) query = query.where('key_name', '=', filter.keyName);
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.before !== undefined) query = query.where('audit_id', '<', filter.before);
  return (await query.execute()).map(toRecord);
}

/**
 * Deletes the entries older than `at` (ATOM), except those about `heldUsers` (legal holds), in
 * batches (src/storage/batches.ts); says how many it deleted and how many it kept for a hold.
 */
export async function pruneAuditLog(
  db: Db,
  at: string,
  heldUsers: readonly string[] = [],
  stopping: Stopping = neverStopping,
): Promise<RetentionCount> {
  let held = 0;
  for (const user of new Set(heldUsers)) held += await countHeldEntries(db, at, user);
  let old = db.selectFrom('audit_log').select('audit_id').where('at', '<', at);
  // NOT IN is unknown for a row about no user: those go too.
  if (heldUsers.length > 0)
    old = old.where((eb) => eb.or([eb('user_id', 'is', null), eb('user_id', 'not in', heldUsers)]));
  const removed = await inBatches(async (limit) => {
    const result = await db.deleteFrom('audit_log').where('audit_id', 'in', old.limit(limit)).executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
  return { removed, held };
}

/** Entries about `user` older than `at`: what a hold keeps, a page of the user's entries at a time. */
function countHeldEntries(db: Db, at: string, user: string): Promise<number> {
  return countInBatches<string>(async (after, limit) => {
    const rows = await heldAuditCountingQuery(db, { at, user, after, limit }).execute();
    return rows.map((row) => ({ key: row.audit_id, counts: Number(row.counts) === 1 }));
  });
}

/**
 * One page of countHeldEntries: the next `limit` entries about one user after the entry `after`,
 * read from the index on (user, id) at that point, each saying whether it is older than `at`.
 */
export function heldAuditCountingQuery(
  db: Db,
  page: { readonly at: string; readonly user: string; readonly after: string | undefined; readonly limit: number },
) {
  let query = db
    .selectFrom('audit_log')
    .select(['audit_id', sql<number>`CASE WHEN at < ${page.at} THEN 1 ELSE 0 END`.as('counts')])
    .where('user_id', '=', page.user)
    .orderBy('audit_id')
    .limit(page.limit);
  if (page.after !== undefined) query = query.where('audit_id', '>', page.after);
  return query;
}

/** Whether any entry is about this user. */
export async function hasAuditRecords(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('audit_log')
    .select('audit_id')
    .where('user_id', '=', userId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

const parametersSchema = z.record(z.string(), z.string());
const idsSchema = z.array(z.string());

function toRecord(row: AuditLogTable): AuditRecord {
  return {
    auditId: row.audit_id,
    at: row.at,
    keyName: row.key_name,
    sourceAddress: row.source_address,
    call: row.call,
    parameters: parametersSchema.parse(JSON.parse(row.parameters)),
    status: row.status,
    userId: row.user_id,
    connectionIds: idsSchema.parse(JSON.parse(row.connection_ids)),
    detail: row.detail,
    repeated: row.repeated,
  };
}
