// Queries on `webhooks`: the subscriptions. Secrets are stored sealed; only
// src/core/webhooks/secrets.ts opens them, to sign.
import type { Selectable } from 'kysely';
import { z } from 'zod';
import { isPostgres, type Db } from './database.js';
import type { WebhooksTable } from './schema.js';

export interface StoredWebhook {
  readonly webhookId: string;
  readonly url: string;
  /** `['*']`: every event type. */
  readonly eventTypes: readonly string[];
  readonly description: string | null;
  /** Sealed. */
  readonly secret: string;
  /** Sealed; signs too until `previousSecretUntil`. */
  readonly previousSecret: string | null;
  readonly previousSecretUntil: string | null;
  readonly createdAt: string;
}

export async function insertWebhook(db: Db, webhook: StoredWebhook): Promise<void> {
  await db
    .insertInto('webhooks')
    .values({
      webhook_id: webhook.webhookId,
      url: webhook.url,
      event_types: JSON.stringify(webhook.eventTypes),
      description: webhook.description,
      secret: webhook.secret,
      previous_secret: webhook.previousSecret,
      previous_secret_until: webhook.previousSecretUntil,
      created_at: webhook.createdAt,
    })
    .execute();
}

export async function findWebhook(db: Db, webhookId: string): Promise<StoredWebhook | undefined> {
  const row = await db.selectFrom('webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
  return row === undefined ? undefined : toWebhook(row);
}

/**
 * The subscription, locked on PostgreSQL until the transaction ends: a change that replaces its
 * secret from what it read (a rotation keeps the current one as the previous) must not run
 * alongside another, whose secret it would then drop unseen. SQLite runs one change at a time.
 */
export async function findWebhookForChange(trx: Db, webhookId: string): Promise<StoredWebhook | undefined> {
  const row = await trx
    .selectFrom('webhooks')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .$if(isPostgres(trx), (query) => query.forUpdate())
    .executeTakeFirst();
  return row === undefined ? undefined : toWebhook(row);
}

/** Every subscription, oldest first. */
export async function listWebhooks(db: Db): Promise<StoredWebhook[]> {
  return (await db.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('webhook_id').execute()).map(
    toWebhook,
  );
}

/** True when a subscription was deleted. */
export async function deleteWebhook(db: Db, webhookId: string): Promise<boolean> {
  const result = await db.deleteFrom('webhooks').where('webhook_id', '=', webhookId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Replaces the secret, keeping the old one as `previous` until `previousUntil`; false when the subscription is gone. */
export async function replaceWebhookSecret(
  db: Db,
  webhookId: string,
  secrets: { readonly secret: string; readonly previousSecret: string; readonly previousUntil: string },
): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({
      secret: secrets.secret,
      previous_secret: secrets.previousSecret,
      previous_secret_until: secrets.previousUntil,
    })
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

const eventTypesSchema = z.array(z.string());

function toWebhook(row: Selectable<WebhooksTable>): StoredWebhook {
  return {
    webhookId: row.webhook_id,
    url: row.url,
    eventTypes: eventTypesSchema.parse(JSON.parse(row.event_types)),
    description: row.description,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretUntil: row.previous_secret_until,
    createdAt: row.created_at,
  };
}

/** The receiver answered (whatever the status): a rest it was on is over. */
export async function endReceiverRest(db: Db, webhookId: string): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ unanswered: 0, rest_until: null })
    .where('webhook_id', '=', webhookId)
    .where((where) => where.or([where('unanswered', '>', 0), where('rest_until', 'is not', null)]))
    .execute();
}

/**
 * The receiver gave no answer: one more in a row (the first, when its last rest ended before
 * `forgottenBefore`, ATOM), and it rests until `restUntil` gives for that count. Two instances
 * noting one at once may count it once; a rest is a courtesy, not a bound.
 */
export async function restReceiver(
  db: Db,
  webhookId: string,
  forgottenBefore: string,
  restUntil: (unanswered: number) => string,
): Promise<void> {
  const row = await db
    .selectFrom('webhooks')
    .select(['unanswered', 'rest_until'])
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  if (row === undefined) return;
  const forgotten = row.rest_until === null || row.rest_until < forgottenBefore;
  const unanswered = forgotten ? 1 : Number(row.unanswered) + 1;
  await db
    .updateTable('webhooks')
    .set({ unanswered, rest_until: restUntil(unanswered) })
    .where('webhook_id', '=', webhookId)
    .execute();
}
