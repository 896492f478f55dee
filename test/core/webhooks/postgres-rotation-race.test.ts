// Two rotations of one subscription's secret at once, on PostgreSQL (SQLite runs one change at
// a time): each answers a secret, and both must sign afterwards, the one committed last as the
// current secret and the other as the previous one, else a receiver given the other is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { rotateWebhookSecret } from '../../../src/core/webhooks/index.js';
import { WEBHOOK_HEADERS } from '../../../src/protocol/webhooks.js';
import { parseIsoDuration, type IsoDuration } from '../../../src/shared/iso-duration.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startTestPortal } from '../../support/test-portal.js';
import { verifyWebhookSignature, WebhookReceiver } from '../../support/webhook-receiver.js';

test('two rotations of one secret at once: both secrets handed out sign the next delivery', async (t) => {
  const portal = await startTestPortal({
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], timeout: 'PT5S' } },
  });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const { webhook } = await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.destroyed' });
  const { ctx } = portal.portal;
  // The first rotation stands still once it has read the subscription, before it writes.
  const hold = new HoldStatement((node, text) => node.kind === 'SelectQueryNode' && text.includes('"webhooks"'));
  const overlap = parseIsoDuration('PT1H') as IsoDuration;
  const first = rotateWebhookSecret({ ...ctx, db: ctx.db.withPlugin(hold) }, webhook.webhook_id, overlap);
  await hold.reached;
  const second = portal.admin.rotateWebhookSecret(webhook.webhook_id, 'PT1H');
  // The second runs to its end, or waits for the first: either way it has had its chance.
  await Promise.race([second, sleep(1_000)]);
  hold.release();
  const [one, two] = await Promise.all([first, second]);
  assert.notEqual(one.secret, two.secret);

  const tested = await portal.admin.testWebhook(webhook.webhook_id);
  assert.equal(tested.outcome, 'delivered');
  const [received] = receiver.received;
  const signature = String(received?.headers[WEBHOOK_HEADERS.signature.toLowerCase()]);
  for (const secret of [one.secret, two.secret]) {
    assert.ok(
      verifyWebhookSignature(signature, received?.body ?? '', secret, Date.now() / 1000),
      'every secret a rotation answered signs',
    );
  }
});
