// A `create_webhook` sent with an Idempotency-Key whose webhook something ends between the call's
// change and the keeping of its answer: the race the kept-answer tests set up, on either database.
import { SECRET_KEY_LINEAGE } from '../../src/core/admin-call.js';
import type { PortalContext } from '../../src/core/context.js';
import { createWebhookSubscription } from '../../src/core/webhooks/index.js';
import type { IdempotentCalls } from '../../src/http/admin-api/idempotency.js';

/**
 * Runs the call through `calls` under the Idempotency-Key "raced": the webhook is made on `ctx`,
 * then `inBetween` runs with its id, before the answer (holding the webhook's secret) is kept.
 */
export function createWebhookRaced(
  calls: IdempotentCalls,
  ctx: PortalContext,
  inBetween: (webhookId: string) => Promise<void>,
): ReturnType<IdempotentCalls['run']> {
  let webhookId = '';
  return calls.run(
    {
      keyLineage: SECRET_KEY_LINEAGE,
      idempotencyKey: 'raced',
      call: 'create_webhook',
      fingerprint: 'f'.repeat(64),
      handedOutBy: () => ({ kind: 'webhook-secret', id: webhookId }),
    },
    async () => {
      const made = await createWebhookSubscription(ctx, {
        url: new URL('https://192.0.2.1/hooks'),
        eventTypes: ['user.created'],
        description: null,
      });
      webhookId = made.webhook.webhook_id;
      await inBetween(webhookId);
      return { status: 200, json: made };
    },
  );
}
