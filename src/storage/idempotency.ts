// Queries on `idempotency_records`: a POST sent with an Idempotency-Key reserves the key (one
// row per admin key lineage and Idempotency-Key: the primary key makes concurrent requests
// agree on one owner), and its answer is kept, sealed, for 24 hours, or until what it handed out
// (a configuration, an admin key, a webhook's secret, an enrollment token) is revoked or
// replaced: then the answer is dropped and the record stays, so that a retry with the key is
// refused instead of making another one.
import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import { isPostgres, type Db } from './database.js';
import type { Database, IdempotencyRecordsTable } from './schema.js';

/** What kept answers hand out that can be taken back (`handed_out_kind`). */
export const HANDED_OUT_KINDS = ['configuration', 'admin-key', 'webhook-secret', 'enrollment-token'] as const;
export type HandedOutKind = (typeof HANDED_OUT_KINDS)[number];

/**
 * What a kept answer handed out: a configuration (`create`: its public key or Common Name), an
 * admin key (`create_admin_key`: its key id), a webhook's signing secret (`create_webhook`,
 * `rotate_webhook_secret`: the webhook's id), an enrollment token (`enrollment_token`: its id).
 */
export interface HandedOut {
  readonly kind: HandedOutKind;
  readonly id: string;
}

/**
 * Why a kept answer was dropped: what it handed out was revoked (deleted, expired, revoked, used
 * up), or replaced while it lives on (an admin key or a webhook secret rotated, an OpenVPN
 * certificate re-issued by extend).
 */
export type HandOutEnd = 'revoked' | 'replaced';

export interface IdempotencyRecord {
  readonly keyLineage: string;
  readonly idempotencyKey: string;
  readonly call: string;
  readonly fingerprint: string;
  readonly owner: string;
  /**
   * `revoked` or `replaced`: what the answer handed out was (HandOutEnd), and the answer dropped.
   * `not-kept`: an answer that held a secret, kept before it named what it handed out, dropped on
   * upgrade (migration 0042).
   */
  readonly state: 'pending' | 'done' | HandOutEnd | 'not-kept';
  readonly status: number | null;
  /** Sealed (src/keys/answer-cipher.ts); null while pending and once dropped. */
  readonly answer: string | null;
  readonly createdAt: string;
  readonly expiresAt: string;
  /** What the answer hands out that can be taken back; null for the answers of the other calls. */
  readonly handedOut: HandedOut | null;
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
  record: Omit<IdempotencyRecord, 'state' | 'status' | 'answer' | 'handedOut'>,
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
      handed_out_kind: null,
      handed_out_id: null,
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
 * Stores the answer of the request that reserved the key, with what it hands out that can be
 * taken back; false when the request no longer holds the key.
 */
export async function completeIdempotencyRecord(
  db: Db,
  owned: OwnedIdempotencyKey,
  answer: { readonly status: number; readonly sealed: string; readonly handedOut: HandedOut | null },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_records')
    .set({
      state: 'done',
      status: answer.status,
      answer: answer.sealed,
      handed_out_kind: answer.handedOut?.kind ?? null,
      handed_out_id: answer.handedOut?.id ?? null,
    })
    .where(heldBy(owned))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * What a change ended of what kept answers handed out (src/listeners/kept-answers.ts), of one
 * kind and for one reason. Enrollment tokens: only those named here that can no longer be
 * redeemed (gone, revoked or used up) lose their answers. Admin keys by name: the keys of these
 * names that are revoked (`revoked`) or rotated out (`replaced`).
 */
export type EndedHandOuts =
  | { readonly kind: 'configuration' | 'webhook-secret'; readonly end: HandOutEnd; readonly ids: readonly string[] }
  | { readonly kind: 'enrollment-token'; readonly end: 'revoked'; readonly ids: readonly string[] }
  | { readonly kind: 'admin-key'; readonly end: HandOutEnd; readonly keyNames: readonly string[] };

/** The ids (or key names) a drop names. */
export function namedBy(ended: EndedHandOuts): readonly string[] {
  return ended.kind === 'admin-key' ? ended.keyNames : ended.ids;
}

/** Names one statement names when kept answers are dropped; more run in several. */
export const KEPT_ANSWERS_PER_STATEMENT = 500;

/**
 * The statement that drops the kept answers of what it names (1 to KEPT_ANSWERS_PER_STATEMENT
 * names), leaving their records in the state of their end: a change's closing write
 * (src/storage/closing-writes.ts, src/listeners/kept-answers.ts).
 */
export function keptAnswersDrop(ended: EndedHandOuts): RawBuilder<unknown> {
  const names = namedBy(ended);
  if (names.length === 0 || names.length > KEPT_ANSWERS_PER_STATEMENT)
    throw new Error(`kept answers dropped in one statement: 1 to ${KEPT_ANSWERS_PER_STATEMENT} names`);
  return sql`UPDATE idempotency_records SET state = ${ended.end}, answer = NULL
    WHERE state = 'done' AND handed_out_kind = ${ended.kind} AND ${handedOutIn(ended, names)}`;
}

function handedOutIn(ended: EndedHandOuts, names: readonly string[]): RawBuilder<unknown> {
  switch (ended.kind) {
    case 'configuration':
    case 'webhook-secret':
      return sql`handed_out_id IN (${sql.join(names)})`;
    case 'enrollment-token':
      // A token with uses left answers again (a redemption that did not take its last use).
      return sql`handed_out_id IN (${sql.join(names)}) AND NOT EXISTS (SELECT 1 FROM enrollment_tokens t
        WHERE t.token_id = idempotency_records.handed_out_id AND t.revoked_at IS NULL AND t.uses_left > 0)`;
    case 'admin-key':
      return sql`handed_out_id IN (SELECT key_id FROM admin_keys WHERE name IN (${sql.join(names)})
        AND ${sql.raw(ended.end === 'revoked' ? 'revoked_at' : 'replaced_by')} IS NOT NULL)`;
  }
}

/** Drops the kept answers of what `ended` names, any number of names, a statement per KEPT_ANSWERS_PER_STATEMENT. */
export async function dropKeptAnswers(db: Db, ended: EndedHandOuts): Promise<void> {
  const names = namedBy(ended);
  for (let start = 0; start < names.length; start += KEPT_ANSWERS_PER_STATEMENT) {
    const part = names.slice(start, start + KEPT_ANSWERS_PER_STATEMENT);
    await keptAnswersDrop(ended.kind === 'admin-key' ? { ...ended, keyNames: part } : { ...ended, ids: part }).execute(
      db,
    );
  }
}

/**
 * Waits until no change under way holds the row of what `handedOut` names: a change that revokes
 * or replaces it writes that row before its closing write (src/storage/closing-writes.ts), so
 * once this returns every such change has either committed, and a read now sees its end, or not
 * yet run its closing write, which will see an answer kept before this call. On PostgreSQL a
 * lock taken and let go at once (a change's closing write may see an answer still pending, as
 * it is kept after its own change commits, and its COMMIT come after the request's read); SQLite
 * runs one change at a time, so no closing write runs while another change is under way.
 */
export async function awaitChangesOf(db: Db, handedOut: HandedOut): Promise<void> {
  if (!isPostgres(db)) return;
  switch (handedOut.kind) {
    case 'configuration':
      // Kept inside the transaction that makes it (create): a change that ends it sees it done.
      return;
    case 'admin-key':
      await db.selectFrom('admin_keys').select('key_id').where('key_id', '=', handedOut.id).forShare().execute();
      return;
    case 'webhook-secret':
      await db.selectFrom('webhooks').select('webhook_id').where('webhook_id', '=', handedOut.id).forShare().execute();
      return;
    case 'enrollment-token':
      await db
        .selectFrom('enrollment_tokens')
        .select('token_id')
        .where('token_id', '=', handedOut.id)
        .forShare()
        .execute();
      return;
  }
}

/** Drops this kept answer: a retry (or its own request) found what it handed out ended before a change dropped it. */
export async function dropKeptAnswer(db: Db, owned: OwnedIdempotencyKey, end: HandOutEnd): Promise<void> {
  await db
    .updateTable('idempotency_records')
    .set({ state: end, answer: null })
    .where('key_lineage', '=', owned.keyLineage)
    .where('idempotency_key', '=', owned.idempotencyKey)
    .where('owner', '=', owned.owner)
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

const KEPT_STATES = ['done', 'revoked', 'replaced', 'not-kept'] as const;

function toRecord(row: IdempotencyRecordsTable): IdempotencyRecord {
  return {
    keyLineage: row.key_lineage,
    idempotencyKey: row.idempotency_key,
    call: row.call,
    fingerprint: row.fingerprint,
    owner: row.owner,
    state: KEPT_STATES.find((state) => state === row.state) ?? 'pending',
    status: row.status,
    answer: row.answer,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    handedOut: handedOutOf(row),
  };
}

function handedOutOf(row: IdempotencyRecordsTable): HandedOut | null {
  const kind = HANDED_OUT_KINDS.find((known) => known === row.handed_out_kind);
  return kind === undefined || row.handed_out_id === null ? null : { kind, id: row.handed_out_id };
}
