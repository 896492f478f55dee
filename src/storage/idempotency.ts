// Queries on `idempotency_records`: a POST sent with an Idempotency-Key reserves the key (one
// row per admin key lineage and Idempotency-Key: the primary key makes concurrent requests
// agree on one owner), and its answer is kept, sealed, for 24 hours, or until the configuration
// a `create` answer handed out is revoked: then the answer is dropped and the record stays, so
// that a retry with the key is refused instead of creating another configuration.
import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import type { Db } from './database.js';
import type { Database, IdempotencyRecordsTable } from './schema.js';

export interface IdempotencyRecord {
  readonly keyLineage: string;
  readonly idempotencyKey: string;
  readonly call: string;
  readonly fingerprint: string;
  readonly owner: string;
  /** `revoked`: the configuration a `create` answer handed out was revoked, and its answer dropped. */
  readonly state: 'pending' | 'done' | 'revoked';
  readonly status: number | null;
  /** Sealed (src/keys/answer-cipher.ts); null while pending and once revoked. */
  readonly answer: string | null;
  readonly createdAt: string;
  readonly expiresAt: string;
  /** The configuration a kept `create` answer handed out (public key or Common Name); null for the other calls. */
  readonly connectionId: string | null;
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
  record: Omit<IdempotencyRecord, 'state' | 'status' | 'answer' | 'connectionId'>,
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
      connection_id: null,
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

/**
 * Stores the answer of the request that reserved the key, with the configuration it handed out
 * (a `create`'s); false when the request no longer holds the key.
 */
export async function completeIdempotencyRecord(
  db: Db,
  owned: OwnedIdempotencyKey,
  answer: { readonly status: number; readonly sealed: string; readonly connectionId?: string },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_records')
    .set({ state: 'done', status: answer.status, answer: answer.sealed, connection_id: answer.connectionId ?? null })
    .where(heldBy(owned))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Configurations one statement names when their kept answers are dropped; more run in several. */
export const KEPT_ANSWERS_PER_STATEMENT = 500;

/**
 * The statement that drops the kept answers of these configurations (1 to
 * KEPT_ANSWERS_PER_STATEMENT of them), leaving their records `revoked`: a change's closing write
 * (src/storage/closing-writes.ts, src/listeners/kept-answers.ts).
 */
export function keptAnswersRevocation(connectionIds: readonly string[]): RawBuilder<unknown> {
  if (connectionIds.length === 0 || connectionIds.length > KEPT_ANSWERS_PER_STATEMENT)
    throw new Error(`kept answers dropped in one statement: 1 to ${KEPT_ANSWERS_PER_STATEMENT}`);
  return sql`UPDATE idempotency_records SET state = 'revoked', answer = NULL
    WHERE state = 'done' AND connection_id IN (${sql.join(connectionIds)})`;
}

/** Drops the kept answers of these configurations, any number of them, a statement per KEPT_ANSWERS_PER_STATEMENT. */
export async function revokeKeptAnswers(db: Db, connectionIds: readonly string[]): Promise<void> {
  for (let start = 0; start < connectionIds.length; start += KEPT_ANSWERS_PER_STATEMENT)
    await keptAnswersRevocation(connectionIds.slice(start, start + KEPT_ANSWERS_PER_STATEMENT)).execute(db);
}

/** Drops this kept answer (a retry found its configuration revoked before the revocation did). */
export async function revokeKeptAnswer(db: Db, record: IdempotencyRecord): Promise<void> {
  await db
    .updateTable('idempotency_records')
    .set({ state: 'revoked', answer: null })
    .where('key_lineage', '=', record.keyLineage)
    .where('idempotency_key', '=', record.idempotencyKey)
    .where('owner', '=', record.owner)
    .where('state', '=', 'done')
    .execute();
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
    state: row.state === 'done' || row.state === 'revoked' ? row.state : 'pending',
    status: row.status,
    answer: row.answer,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    connectionId: row.connection_id,
  };
}
