// The webhook calls (ours, not the specification's): subscriptions (add, list, delete, new
// secret, test event) and the delivery log. Scope admin and a key for every profile: a
// subscription hears of every profile's users and configurations.
import {
  deleteWebhookSubscription,
  createWebhookSubscription,
  listWebhookSubscriptions,
  readWebhookDeliveries,
  rotateWebhookSecret,
  testWebhookSubscription,
} from '../../../../core/webhooks/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import type { IsoDuration } from '../../../../shared/iso-duration.js';
import { defineRoute } from '../../admin-route.js';

/** A day: long enough for a receiver's deployment to pick up the new secret. */
const DEFAULT_OVERLAP: IsoDuration = { text: 'P1D', years: 0, months: 0, days: 1, hours: 0, minutes: 0, seconds: 0 };

export const webhooksRoute = defineRoute({
  ...ADMIN_API_CALLS.webhooks,
  summary: 'The webhook subscriptions (without their secrets)',
  since: 'extension',
  source: 'query',
  needsEveryProfile: true,
  answerDoc: 'Every subscription, oldest first',
  async handle(ctx) {
    return { status: 200, json: { webhooks: await listWebhookSubscriptions(ctx) } };
  },
});

export const createWebhookRoute = defineRoute({
  ...ADMIN_API_CALLS.createWebhook,
  summary: 'Adds a webhook subscription; the answer holds its signing secret, shown this once',
  since: 'extension',
  source: 'post',
  needsEveryProfile: true,
  answerDoc: 'The subscription and its secret',
  // A retry gets the secret again only while it is the subscription's current one.
  handsOut: { kind: 'webhook-secret', idIn: (answer) => answer.webhook.webhook_id },
  async handle(ctx, { url, event_types, description }) {
    return {
      status: 200,
      json: await createWebhookSubscription(ctx, { url, eventTypes: event_types, description: description ?? null }),
    };
  },
});

export const deleteWebhookRoute = defineRoute({
  ...ADMIN_API_CALLS.deleteWebhook,
  summary: 'Deletes a webhook subscription; what it still had to send is cancelled',
  since: 'extension',
  source: 'post',
  needsEveryProfile: true,
  answerDoc: 'Deleted',
  async handle(ctx, { webhook_id }) {
    await deleteWebhookSubscription(ctx, webhook_id);
    return { status: 204 };
  },
});

export const rotateWebhookSecretRoute = defineRoute({
  ...ADMIN_API_CALLS.rotateWebhookSecret,
  summary: 'Gives a subscription a new signing secret; the old one signs too until the overlap is over',
  since: 'extension',
  source: 'post',
  needsEveryProfile: true,
  answerDoc: 'The new secret, shown this once',
  handsOut: { kind: 'webhook-secret', idIn: (answer) => answer.webhook_id },
  async handle(ctx, { webhook_id, overlap }) {
    return { status: 200, json: await rotateWebhookSecret(ctx, webhook_id, overlap ?? DEFAULT_OVERLAP) };
  },
});

export const testWebhookRoute = defineRoute({
  ...ADMIN_API_CALLS.testWebhook,
  summary: 'Sends a webhook.test event to a subscription now and tells what the receiver answered',
  since: 'extension',
  source: 'post',
  needsEveryProfile: true,
  answerDoc: 'The attempt (also in the delivery log; not retried)',
  async handle(ctx, { webhook_id }) {
    const report = await testWebhookSubscription(ctx, webhook_id);
    return {
      status: 200,
      json: {
        delivery_id: report.deliveryId,
        event_id: report.eventId,
        outcome: report.outcome,
        status: report.status,
        duration_ms: report.durationMs,
        detail: report.detail,
      },
    };
  },
});

export const webhookDeliveriesRoute = defineRoute({
  ...ADMIN_API_CALLS.webhookDeliveries,
  summary: 'The webhook delivery log: each event sent to each subscription with its attempts, newest first',
  since: 'extension',
  source: 'query',
  needsEveryProfile: true,
  answerDoc: 'One page of deliveries, newest first',
  async handle(ctx, { webhook_id, event_type, event_id, state, since, until, cursor, limit }) {
    const page = await readWebhookDeliveries(ctx, {
      ...(webhook_id === undefined ? {} : { webhookId: webhook_id }),
      ...(event_type === undefined ? {} : { eventType: event_type }),
      ...(event_id === undefined ? {} : { eventId: event_id }),
      ...(state === undefined ? {} : { state }),
      ...(since === undefined ? {} : { since }),
      ...(until === undefined ? {} : { until }),
      ...(cursor === undefined ? {} : { cursor }),
      ...(limit === undefined ? {} : { limit }),
    });
    return { status: 200, json: page };
  },
});
