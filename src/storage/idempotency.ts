// Queries on `idempotency_records`: a POST sent with an Idempotency-Key reserves the key (one
// row per admin key lineage and Idempotency-Key: the primary key makes concurrent requests
// agree on one owner), and its answer is kept, sealed, for 24 hours.
import type { ExpressionBuilder } from 'kysely';
import type { Db } from './database.js';
import type { Database, IdempotencyRecordsTable } from './schema.js';

export interface IdempotencyRecord {
  readonly keyLineage: string;
  readonly idempotencyKey: string;
  readonly call: string;
  readonly fingerprint: string;
  readonly owner: string;
  readonly state: 'pending' | 'done';
  readonly status: number | null;
  /** Sealed (src/keys/answer-cipher.ts). */
  readonly answer: string | null;
  readonly createdAt: string;
  readonly expiresAt: string;
}

export async function findIdempotencyRecord(
  db: Db,
  keyLineage: string,
  idempotencyKey: string,
): Promise<IdempotencyRecord | undefined> {
  const row = await db
    .selectFrom('idempotency_records')
    .selectAll()
    .where('key_lineage', '=', keyLineage)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
  return row === undefined ? undefined : toRecord(row);
}

/** Reserves the key for a request; false when another request holds it already. */
export async function reserveIdempotencyKey(
  db: Db,
  record: Omit<IdempotencyRecord, 'state' | 'status' | 'answer'>,
): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_records')
    .values({
      key_lineage: record.keyLineage,
      idempotency_key: record.idempotencyKey,
      call: record.call,
      fingerprint: record.fingerprint,
      owner: record.owner,
      state: 'pending',
      status: null,
      answer: null,
      created_at: record.createdAt,
      expires_at: record.expiresAt,
    })
    .onConflict((conflict) => conflict.columns(['key_lineage', 'idempotency_key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** A reservation as its request knows it. */
export interface OwnedIdempotencyKey {
  readonly keyLineage: string;
  readonly idempotencyKey: string;
  readonly owner: string;
}

/** The record while the request that reserved it still holds it (pending, same owner). */
function heldBy(owned: OwnedIdempotencyKey) {
  return (where: ExpressionBuilder<Database, 'idempotency_records'>) =>
    where.and({
      key_lineage: owned.keyLineage,
      idempotency_key: owned.idempotencyKey,
      owner: owned.owner,
      state: 'pending',
    });
}

/** Stores the answer of the request that reserved the key; false when it no longer holds it. */
export async function completeIdempotencyRecord(
  db: Db,
  owned: OwnedIdempotencyKey,
  answer: { readonly status: number; readonly sealed: string },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_records')
    .set({ state: 'done', status: answer.status, answer: answer.sealed })
    .where(heldBy(owned))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Gives up a reservation that is still pending (the request failed, or its owner vanished). */
export async function releaseIdempotencyKey(db: Db, owned: OwnedIdempotencyKey): Promise<void> {
  await db.deleteFrom('idempotency_records').where(heldBy(owned)).execute();
}

/** Deletes this record if it is the one seen (same owner) and has expired. */
export async function deleteExpiredIdempotencyRecord(db: Db, record: IdempotencyRecord, now: string): Promise<void> {
  await db
    .deleteFrom('idempotency_records')
    .where('key_lineage', '=', record.keyLineage)
    .where('idempotency_key', '=', record.idempotencyKey)
    .where('owner', '=', record.owner)
    .where('expires_at', '<=', now)
    .execute();
}

/** Deletes every record (and so every kept answer) that has expired; returns how many. */
export async function pruneIdempotencyRecords(db: Db, now: string): Promise<number> {
  const result = await db.deleteFrom('idempotency_records').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

function toRecord(row: IdempotencyRecordsTable): IdempotencyRecord {
  return {
    keyLineage: row.key_lineage,
    idempotencyKey: row.idempotency_key,
    call: row.call,
    fingerprint: row.fingerprint,
    owner: row.owner,
    state: row.state === 'done' ? 'done' : 'pending',
    status: row.status,
    answer: row.answer,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
