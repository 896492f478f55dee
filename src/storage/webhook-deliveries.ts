// Queries on `webhook_deliveries`: the webhook outbox and the delivery log in one table. A row is
// written in the transaction of the change it reports (src/listeners/webhook-outbox.ts), claimed
// under a lease by one portal instance per attempt (a conditional update: exactly one instance
// wins it, on SQLite and on PostgreSQL), and stays as the log entry once delivered or given up.
import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import { EVERY_EVENT_TYPE } from '../protocol/webhooks.js';
import { interruptAttempts } from './webhook-attempts.js';
import { inBatches, neverStopping, type Stopping } from './batches.js';
import { isPostgres, type Db } from './database.js';
import type { Database, WebhookDeliveriesTable } from './schema.js';

export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'cancelled';

export interface StoredDelivery {
  readonly deliveryId: string;
  readonly webhookId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly payload: string;
  readonly createdAt: string;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly nextAttemptAt: string;
  readonly leaseUntil: string | null;
  readonly leaseToken: string | null;
  readonly finishedAt: string | null;
}

export type NewDelivery = Pick<
  StoredDelivery,
  'deliveryId' | 'webhookId' | 'eventId' | 'eventType' | 'payload' | 'createdAt'
> & {
  /** Set when the writer sends the first attempt itself (test-fire): the lease it holds. */
  readonly lease?: { readonly until: string; readonly token: string };
};

export async function insertDeliveries(db: Db, deliveries: readonly NewDelivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  await db
    .insertInto('webhook_deliveries')
    .values(
      deliveries.map((delivery) => ({
        delivery_id: delivery.deliveryId,
        webhook_id: delivery.webhookId,
        event_id: delivery.eventId,
        event_type: delivery.eventType,
        payload: delivery.payload,
        created_at: delivery.createdAt,
        state: 'pending',
        attempts: delivery.lease === undefined ? 0 : 1,
        next_attempt_at: delivery.createdAt,
        lease_until: delivery.lease?.until ?? null,
        lease_token: delivery.lease?.token ?? null,
        finished_at: null,
      })),
    )
    .execute();
}

/**
 * An event for the outbox, before anyone knows who subscribed to it: the statement that writes it
 * reads the subscriptions itself, so a change spends no round trip of its own on them.
 */
export interface OutboxEvent {
  /** A UUIDv7 made when the event was written (timeOrderedId): its time and counter begin each delivery's id. */
  readonly idSource: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly payload: string;
  readonly createdAt: string;
}

/** Events written by one statement: a large change (a destroy of many configurations) takes several. */
export const OUTBOX_EVENTS_PER_STATEMENT = 500;

/**
 * One pending delivery of each event to every subscription whose event types name it (or `*`),
 * as one statement that reads the subscriptions as it inserts: a subscription committed before
 * the statement starts is seen. Each delivery's id is a UUIDv7 with the time and counter of the
 * event's `idSource` and a random part of the server's (one event can go to several
 * subscriptions), so the log keeps the order the events were written in. Returns a row per
 * delivery. At most OUTBOX_EVENTS_PER_STATEMENT events.
 */
export function outboxInsert(events: readonly OutboxEvent[], postgres: boolean): RawBuilder<{ delivery_id: string }> {
  const rows = events.map(
    (event) =>
      sql`(${event.idSource.slice(0, UUID_TIME_AND_COUNTER)}, ${event.eventId}, ${event.eventType}, ${event.payload}, ${event.createdAt})`,
  );
  // The random part of a UUID (its variant nibble 8–b, then 15 hex digits and a dash): 17 characters.
  const randomPart = postgres
    ? sql`right(gen_random_uuid()::text, 17)`
    : sql`substr('89ab', (random() & 3) + 1, 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))`;
  const wanted = postgres
    ? sql`webhooks.event_types::jsonb ?| array[${EVERY_EVENT_TYPE}::text, event.event_type]`
    : sql`EXISTS (SELECT 1 FROM json_each(webhooks.event_types) AS asked WHERE asked.value IN (${EVERY_EVENT_TYPE}, event.event_type))`;
  return sql<{ delivery_id: string }>`
    WITH event (id_start, event_id, event_type, payload, created_at) AS (VALUES ${sql.join(rows)})
    INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_id, event_type, payload, created_at, state, attempts,
      next_attempt_at)
    SELECT event.id_start || ${randomPart}, webhooks.webhook_id, event.event_id, event.event_type, event.payload,
      event.created_at, 'pending', 0, event.created_at
    FROM event JOIN webhooks ON ${wanted}
    RETURNING delivery_id`;
}

/** "xxxxxxxx-xxxx-7xxx-": a UUIDv7's milliseconds, version and counter. */
const UUID_TIME_AND_COUNTER = 19;

/** Writes the outbox's deliveries of `events` (outboxInsert), in as many statements as they need; answers how many. */
export async function insertOutboxDeliveries(db: Db, events: readonly OutboxEvent[]): Promise<number> {
  let written = 0;
  for (let start = 0; start < events.length; start += OUTBOX_EVENTS_PER_STATEMENT) {
    const chunk = events.slice(start, start + OUTBOX_EVENTS_PER_STATEMENT);
    written += (await outboxInsert(chunk, isPostgres(db)).execute(db)).rows.length;
  }
  return written;
}

/**
 * A pending delivery due at `now` whose lease is not live (never taken, or run out), of a
 * receiver that does not rest: what dueDeliveries lists and claimDelivery takes, one condition
 * so the two cannot disagree.
 */
function dueAndUnheld(now: string) {
  return (where: ExpressionBuilder<Database, 'webhook_deliveries'>) =>
    where.and([
      where('state', '=', 'pending'),
      where('next_attempt_at', '<=', now),
      where.or([where('lease_until', 'is', null), where('lease_until', '<=', now)]),
      // Not of a receiver that rests (it gave no answer lately: webhooks.rest_until).
      where('webhook_id', 'not in', where.selectFrom('webhooks').select('webhook_id').where('rest_until', '>', now)),
    ]);
}

/**
 * The oldest due delivery of each receiver (oldest due first, at most `limit` receivers) that
 * nobody holds; none of a subscription that has a delivery under a live lease (one attempt in
 * flight per receiver), nor of one whose receiver rests. One per receiver, so that a receiver
 * with a long backlog does not fill the list and hide the others' deliveries from the worker.
 */
export async function dueDeliveries(
  db: Db,
  now: string,
  limit: number,
): Promise<{ readonly deliveryId: string; readonly webhookId: string }[]> {
  const ranked = db
    .selectFrom('webhook_deliveries')
    .select((select) => [
      'delivery_id',
      'webhook_id',
      'next_attempt_at',
      select.fn
        .agg<number>('row_number')
        .over((over) => over.partitionBy('webhook_id').orderBy('next_attempt_at').orderBy('delivery_id'))
        .as('receiver_rank'),
    ])
    .where(dueAndUnheld(now))
    .where('webhook_id', 'not in', heldReceivers(db, now));
  const rows = await db
    .selectFrom(ranked.as('ranked'))
    .select(['delivery_id', 'webhook_id'])
    .where('receiver_rank', '=', 1)
    .orderBy('next_attempt_at')
    .orderBy('delivery_id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ deliveryId: row.delivery_id, webhookId: row.webhook_id }));
}

/**
 * Takes the delivery for one attempt when it is still due and unheld, and no other delivery of
 * its receiver is under a live lease: counts the attempt and sets the lease. The condition is
 * checked by the update itself, and on PostgreSQL after the subscription's row is locked, so of
 * several instances that try at once (the same delivery, or two of one receiver) exactly one
 * gets it: the other's statement runs after the winner committed and sees its lease. SQLite
 * runs one write at a time.
 */
export async function claimDelivery(
  db: Db,
  deliveryId: string,
  now: string,
  lease: { readonly until: string; readonly token: string },
): Promise<StoredDelivery | undefined> {
  return db.transaction().execute(async (trx) => {
    if (isPostgres(trx))
      await sql`SELECT 1 FROM webhooks JOIN webhook_deliveries USING (webhook_id)
        WHERE delivery_id = ${deliveryId} FOR UPDATE OF webhooks`.execute(trx);
    const row = await trx
      .updateTable('webhook_deliveries')
      .set({ lease_until: lease.until, lease_token: lease.token, attempts: sql<number>`attempts + 1` })
      .where('delivery_id', '=', deliveryId)
      .where(dueAndUnheld(now))
      .where('webhook_id', 'not in', heldReceivers(trx, now))
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : toDelivery(row);
  });
}

/** The subscriptions with a delivery under a live lease: one attempt in flight per receiver. */
function heldReceivers(db: Db, now: string) {
  return db
    .selectFrom('webhook_deliveries as held')
    .select('held.webhook_id')
    .where('held.state', '=', 'pending')
    .where('held.lease_until', '>', now);
}

/** What an attempt's end does to its delivery. */
export type DeliveryOutcome =
  | { readonly state: 'delivered' | 'failed' | 'cancelled'; readonly at: string }
  | { readonly state: 'pending'; readonly nextAttemptAt: string };

/**
 * Ends the lease with the attempt's outcome; false when the lease was no longer this attempt's
 * (it ran out and another instance took over, or the subscription was deleted meanwhile).
 */
export async function finishDelivery(
  db: Db,
  deliveryId: string,
  leaseToken: string,
  outcome: DeliveryOutcome,
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set(
      outcome.state === 'pending'
        ? { next_attempt_at: outcome.nextAttemptAt, lease_until: null, lease_token: null }
        : { state: outcome.state, finished_at: outcome.at, lease_until: null, lease_token: null },
    )
    .where('delivery_id', '=', deliveryId)
    .where('lease_token', '=', leaseToken)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deliveries given up by one statement of giveUpExpiredDeliveries. */
const GIVE_UP_BATCH = 500;

/**
 * Gives up (`failed`) the pending deliveries of events made before `createdBefore` (retryFor ago)
 * that nobody holds, whether or not they were ever attempted: a receiver that rests, or a
 * backlog behind it, would otherwise keep them pending (the outbox growing while it is away, the
 * events sent days late once it is back), as only an attempt gave a delivery up. An attempt
 * left `sending` by an instance that died becomes `interrupted`. Answers how many.
 */
export async function giveUpExpiredDeliveries(db: Db, now: string, createdBefore: string): Promise<number> {
  let given = 0;
  for (;;) {
    const expired = db
      .selectFrom('webhook_deliveries')
      .select('delivery_id')
      .where('state', '=', 'pending')
      .where('created_at', '<', createdBefore)
      .where((where) => where.or([where('lease_until', 'is', null), where('lease_until', '<=', now)]))
      .limit(GIVE_UP_BATCH);
    // The conditions again in the update itself: a delivery claimed meanwhile is left to its attempt.
    const rows = await db
      .updateTable('webhook_deliveries')
      .set({ state: 'failed', finished_at: now, lease_until: null, lease_token: null })
      .where('delivery_id', 'in', expired)
      .where('state', '=', 'pending')
      .where((where) => where.or([where('lease_until', 'is', null), where('lease_until', '<=', now)]))
      .returning('delivery_id')
      .execute();
    const ids = rows.map((row) => row.delivery_id);
    await interruptAttempts(db, ids);
    given += ids.length;
    if (ids.length < GIVE_UP_BATCH) return given;
  }
}

/** The deliveries of a deleted subscription that were still to be sent: none of them ever is. */
export async function cancelPendingDeliveries(db: Db, webhookId: string, now: string): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ state: 'cancelled', finished_at: now, lease_until: null, lease_token: null })
    .where('webhook_id', '=', webhookId)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function findDelivery(db: Db, deliveryId: string): Promise<StoredDelivery | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirst();
  return row === undefined ? undefined : toDelivery(row);
}

export interface DeliveryFilter {
  readonly webhookId?: string;
  readonly eventType?: string;
  readonly eventId?: string;
  readonly state?: DeliveryState;
  /** ATOM: made at or after. */
  readonly since?: string;
  /** ATOM: made before. */
  readonly until?: string;
  /** Deliveries older than this one (the cursor of the page before). */
  readonly before?: string;
  readonly limit: number;
}

/** Deliveries matching the filter, newest first. */
export async function deliveryPage(db: Db, filter: DeliveryFilter): Promise<StoredDelivery[]> {
  let query = db.selectFrom('webhook_deliveries').selectAll().orderBy('delivery_id', 'desc').limit(filter.limit);
  if (filter.webhookId !== undefined) query = query.where('webhook_id', '=', filter.webhookId);
  if (filter.eventType !== undefined) query = query.where('event_type', '=', filter.eventType);
  if (filter.eventId !== undefined) query = query.where('event_id', '=', filter.eventId);
  if (filter.state !== undefined) query = query.where('state', '=', filter.state);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
  if (filter.before !== undefined) query = query.where('delivery_id', '<', filter.before);
  return (await query.execute()).map(toDelivery);
}

/** Deletes finished deliveries (and their attempts) made before `before`, in batches; returns how many. */
export async function pruneDeliveries(db: Db, before: string, stopping: Stopping = neverStopping): Promise<number> {
  const finished = db
    .selectFrom('webhook_deliveries')
    .select('delivery_id')
    .where('state', '!=', 'pending')
    .where('created_at', '<', before);
  return inBatches(async (limit) => {
    // The batch's keys are read once, so both statements name the same deliveries.
    const ids = (await finished.limit(limit).execute()).map((row) => row.delivery_id);
    if (ids.length === 0) return 0;
    await db.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
    const result = await db.deleteFrom('webhook_deliveries').where('delivery_id', 'in', ids).executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
}

function toDelivery(row: WebhookDeliveriesTable): StoredDelivery {
  return {
    deliveryId: row.delivery_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type,
    payload: row.payload,
    createdAt: row.created_at,
    state: row.state as DeliveryState,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    leaseUntil: row.lease_until,
    leaseToken: row.lease_token,
    finishedAt: row.finished_at,
  };
}
