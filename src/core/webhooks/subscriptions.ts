// Webhook subscriptions as the Admin API and the command line manage them: add one (its secret
// is shown once), list, delete (what it still had to send is cancelled), give it a new secret
// (the old one keeps signing too until the overlap is over, so receivers switch without missing
// a delivery), fire a test event at it, and read its delivery log a page at a time.
import { randomBytes } from 'node:crypto';
import { newWebhookSecret } from '../../keys/webhook-signature.js';
import { EVERY_EVENT_TYPE, WEBHOOK_TEST_EVENT, type WebhookEventType } from '../../protocol/webhooks.js';
import type { WebhookDeliveryEntry, WebhookDeliveriesPage, WebhookInfo } from '../../protocol/admin-api.js';
import { addDuration, type IsoDuration } from '../../shared/iso-duration.js';
import { timeOrderedId } from '../../shared/time-ordered-id.js';
import { formatAtom } from '../../shared/time.js';
import { attemptsOf, type StoredAttempt } from '../../storage/webhook-attempts.js';
import {
  cancelPendingDeliveries,
  deliveryPage,
  findDelivery,
  insertDeliveries,
  type DeliveryFilter,
  type StoredDelivery,
} from '../../storage/webhook-deliveries.js';
import {
  deleteWebhook,
  findWebhook,
  findWebhookForChange,
  insertWebhook,
  listWebhooks,
  replaceWebhookSecret,
  type StoredWebhook,
} from '../../storage/webhooks.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { attemptDelivery, leaseMilliseconds, newLeaseToken, type AttemptReport } from './delivery.js';
import { webhookBody } from './messages.js';
import { sealWebhookSecret } from './secrets.js';
import { targetRefusal, TargetGuard } from './sender.js';

export const DEFAULT_DELIVERY_PAGE = 100;
export const MAX_DELIVERY_PAGE = 1000;

export interface NewSubscription {
  readonly url: URL;
  /** The types asked for, or `['*']` for every type. */
  readonly eventTypes: readonly (WebhookEventType | typeof EVERY_EVENT_TYPE)[];
  readonly description: string | null;
}

/** Adds a subscription; the answer holds its secret, which is never shown again. */
export async function createWebhookSubscription(
  ctx: PortalContext,
  subscription: NewSubscription,
): Promise<{ webhook: WebhookInfo; secret: string }> {
  const { url } = subscription;
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new PortalError('invalid-parameter', 'a webhook URL must be http: or https:');
  if (url.username !== '' || url.password !== '') {
    throw new PortalError(
      'invalid-parameter',
      'a webhook URL must not carry a user name or password: receivers authenticate the portal by the signature',
    );
  }
  const refusal = await targetRefusal(
    url,
    new TargetGuard(ctx.config.webhooks, ctx.config.listen.host),
    ctx.config.webhooks.timeoutMs,
  );
  if (refusal !== null) throw new PortalError('invalid-parameter', refusal);
  const webhookId = `wh_${randomBytes(12).toString('hex')}`;
  const secret = newWebhookSecret();
  const now = ctx.clock.now();
  const stored: StoredWebhook = {
    webhookId,
    url: url.href,
    eventTypes: subscription.eventTypes.includes(EVERY_EVENT_TYPE)
      ? [EVERY_EVENT_TYPE]
      : [...new Set(subscription.eventTypes)],
    description: subscription.description,
    secret: sealWebhookSecret(ctx, webhookId, secret),
    previousSecret: null,
    previousSecretUntil: null,
    createdAt: formatAtom(now),
  };
  await ctx.events.change(ctx.db, async (trx, announce) => {
    await insertWebhook(trx, stored);
    await announce({ type: 'webhook.created', at: now, webhookId });
  });
  return { webhook: toInfo(stored), secret };
}

export async function listWebhookSubscriptions(ctx: PortalContext): Promise<WebhookInfo[]> {
  return (await listWebhooks(ctx.db)).map(toInfo);
}

/** Deletes a subscription; its pending deliveries are cancelled, its log stays until housekeeping prunes it. */
export async function deleteWebhookSubscription(ctx: PortalContext, webhookId: string): Promise<void> {
  const now = ctx.clock.now();
  await ctx.events.change(ctx.db, async (trx, announce) => {
    if (!(await deleteWebhook(trx, webhookId))) throw noSuchWebhook(webhookId);
    await cancelPendingDeliveries(trx, webhookId, formatAtom(now));
    await announce({ type: 'webhook.deleted', at: now, webhookId });
  });
}

/** A new secret; the old one signs too until `overlap` has passed. */
export async function rotateWebhookSecret(
  ctx: PortalContext,
  webhookId: string,
  overlap: IsoDuration,
): Promise<{ webhook_id: string; secret: string; previous_secret_until: string }> {
  const now = ctx.clock.now();
  const secret = newWebhookSecret();
  const previousUntil = formatAtom(addDuration(now, overlap));
  await ctx.events.change(ctx.db, async (trx, announce) => {
    // Locked: of two rotations at once, the later keeps the earlier's secret as the previous one.
    const webhook = await findWebhookForChange(trx, webhookId);
    if (webhook === undefined) throw noSuchWebhook(webhookId);
    await replaceWebhookSecret(trx, webhookId, {
      secret: sealWebhookSecret(ctx, webhookId, secret),
      previousSecret: webhook.secret,
      previousUntil,
    });
    await announce({ type: 'webhook.secret_rotated', at: now, webhookId });
  });
  return { webhook_id: webhookId, secret, previous_secret_until: previousUntil };
}

/**
 * Sends a `webhook.test` event to one subscription now and answers what happened. It is
 * attempted once (no retries: the caller sees the outcome) and is in the delivery log.
 */
export async function testWebhookSubscription(ctx: PortalContext, webhookId: string): Promise<AttemptReport> {
  const webhook = await findWebhook(ctx.db, webhookId);
  if (webhook === undefined) throw noSuchWebhook(webhookId);
  const now = ctx.clock.now();
  const eventId = timeOrderedId();
  const deliveryId = timeOrderedId();
  const leaseToken = newLeaseToken();
  await insertDeliveries(ctx.db, [
    {
      deliveryId,
      webhookId,
      eventId,
      eventType: WEBHOOK_TEST_EVENT,
      payload: webhookBody(eventId, now, { type: WEBHOOK_TEST_EVENT, data: { webhook_id: webhookId } }),
      createdAt: formatAtom(now),
      lease: { until: formatAtom(new Date(now.getTime() + leaseMilliseconds(ctx))), token: leaseToken },
    },
  ]);
  const delivery = await findDelivery(ctx.db, deliveryId);
  if (delivery === undefined) throw new Error('a test delivery vanished');
  return attemptDelivery(ctx, delivery, leaseToken, { retry: false, signal: new AbortController().signal });
}

/** The delivery log's filters (storage's), with the page's cursor and size as the Admin API takes them. */
export type DeliveryQuery = Omit<DeliveryFilter, 'before' | 'limit'> & {
  readonly cursor?: string;
  readonly limit?: number;
};

/** One page of the delivery log, newest first, each delivery with its attempts. */
export async function readWebhookDeliveries(ctx: PortalContext, query: DeliveryQuery): Promise<WebhookDeliveriesPage> {
  const limit = Math.min(Math.max(query.limit ?? DEFAULT_DELIVERY_PAGE, 1), MAX_DELIVERY_PAGE);
  const { cursor, limit: _limit, ...filter } = query;
  const rows = await deliveryPage(ctx.db, {
    ...filter,
    ...(cursor === undefined ? {} : { before: cursor }),
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const attempts = await attemptsOf(
    ctx.db,
    page.map((delivery) => delivery.deliveryId),
  );
  const last = page[page.length - 1];
  return {
    webhook_deliveries: page.map((delivery) => toEntry(delivery, attempts.get(delivery.deliveryId) ?? [])),
    next_cursor: rows.length > limit && last !== undefined ? last.deliveryId : null,
  };
}

function noSuchWebhook(webhookId: string): PortalError {
  return new PortalError('no-such-webhook', `no webhook "${webhookId}"`);
}

function toInfo(webhook: StoredWebhook): WebhookInfo {
  return {
    webhook_id: webhook.webhookId,
    url: webhook.url,
    event_types: [...webhook.eventTypes],
    description: webhook.description,
    created_at: webhook.createdAt,
    previous_secret_until: webhook.previousSecretUntil,
  };
}

function toEntry(delivery: StoredDelivery, attempts: readonly StoredAttempt[]): WebhookDeliveryEntry {
  return {
    delivery_id: delivery.deliveryId,
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    created_at: delivery.createdAt,
    state: delivery.state,
    next_attempt_at: delivery.state === 'pending' ? delivery.nextAttemptAt : null,
    finished_at: delivery.finishedAt,
    attempts: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: attempt.startedAt,
      outcome: attempt.outcome,
      status: attempt.status,
      duration_ms: attempt.durationMs,
      detail: attempt.detail,
    })),
  };
}
