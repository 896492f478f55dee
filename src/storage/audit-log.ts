// Queries on `audit_log`: one row per Admin API call that changed something, was refused or
// failed. Rows are written by the audit listener only (src/listeners/audit-log.ts), in the
// transaction of the change they record.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { formatAtom } from '../shared/time.js';
import type { Db } from './database.js';
import { preparedQuery, type Slot } from './prepared-query.js';
import type { AuditLogTable } from './schema.js';

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
 * A new audit id: 12 hex digits of milliseconds, 4 of a per-process counter, 8 random. Ids sort
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
  return `${lastMillis.toString(16).padStart(12, '0')}${counter.toString(16).padStart(4, '0')}${randomBytes(4).toString('hex')}`;
}

export async function insertAuditRecord(db: Db, record: AuditRecord): Promise<void> {
  await insertAuditRow(db, { ...record, parameters: JSON.stringify(record.parameters), connectionIds: JSON.stringify(record.connectionIds) });
}

type AuditRow = Omit<AuditRecord, 'parameters' | 'connectionIds'> & { readonly parameters: string; readonly connectionIds: string };

const insertAuditRow = preparedQuery((db, value: Slot<AuditRow>) =>
  db.insertInto('audit_log').values({
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
  }),
);

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

/** Deletes the entries older than `before`; returns how many. */
export async function pruneAuditLog(db: Db, before: Date): Promise<number> {
  const result = await db.deleteFrom('audit_log').where('at', '<', formatAtom(before)).executeTakeFirst();
  return Number(result.numDeletedRows);
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
  };
}
