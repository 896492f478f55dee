// Queries on `webhook_attempts`: the delivery log's lines, one per attempt. An attempt is written
// when it starts (`sending`), so an attempt the portal could not finish — it was killed, or lost
// its lease — shows as `interrupted` rather than not at all.
import type { Db } from './database.js';
import type { WebhookAttemptsTable } from './schema.js';
import { listIn } from '../shared/list-in.js';

export type AttemptOutcome = 'sending' | 'delivered' | 'failed' | 'refused' | 'interrupted';

export interface StoredAttempt {
  readonly deliveryId: string;
  readonly attempt: number;
  readonly startedAt: string;
  readonly outcome: AttemptOutcome;
  /** The receiver's HTTP status; null when it did not answer. */
  readonly status: number | null;
  readonly durationMs: number | null;
  /** Why it failed or was refused, or the start of the receiver's answer. */
  readonly detail: string | null;
}

/** Records an attempt as started; earlier attempts still `sending` (their sender is gone) become `interrupted`. */
export async function startAttempt(db: Db, deliveryId: string, attempt: number, startedAt: string): Promise<void> {
  await interruptAttempts(db, [deliveryId]);
  await db
    .insertInto('webhook_attempts')
    .values({
      delivery_id: deliveryId,
      attempt,
      started_at: startedAt,
      outcome: 'sending',
      status: null,
      duration_ms: null,
      detail: null,
    })
    .execute();
}

/** The attempts of these deliveries still `sending` (their sender is gone) become `interrupted`. */
export async function interruptAttempts(db: Db, deliveryIds: readonly string[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await db
    .updateTable('webhook_attempts')
    .set({
      outcome: 'interrupted',
      detail: 'the portal instance sending it stopped or lost its lease before an answer was recorded',
    })
    .where('delivery_id', 'in', deliveryIds)
    .where('outcome', '=', 'sending')
    .execute();
}

export async function finishAttempt(
  db: Db,
  deliveryId: string,
  attempt: number,
  result: Pick<StoredAttempt, 'outcome' | 'status' | 'durationMs' | 'detail'>,
): Promise<void> {
  await db
    .updateTable('webhook_attempts')
    .set({ outcome: result.outcome, status: result.status, duration_ms: result.durationMs, detail: result.detail })
    .where('delivery_id', '=', deliveryId)
    .where('attempt', '=', attempt)
    .execute();
}

/** The attempts of these deliveries, by delivery, in order. */
export async function attemptsOf(db: Db, deliveryIds: readonly string[]): Promise<Map<string, StoredAttempt[]>> {
  const byDelivery = new Map<string, StoredAttempt[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const rows = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
  for (const row of rows) {
    listIn(byDelivery, row.delivery_id).push(toAttempt(row));
  }
  return byDelivery;
}

function toAttempt(row: WebhookAttemptsTable): StoredAttempt {
  return {
    deliveryId: row.delivery_id,
    attempt: Number(row.attempt),
    startedAt: row.started_at,
    outcome: row.outcome as AttemptOutcome,
    status: row.status === null ? null : Number(row.status),
    durationMs: row.duration_ms === null ? null : Number(row.duration_ms),
    detail: row.detail,
  };
}
