// A receiver's rest kept with its subscription: each silence in a row doubles it, an answer ends
// it, and a silence long after the last rest ended counts as the first again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { endReceiverRest, restReceiver } from '../../src/storage/webhooks.js';
import { startTestPortal } from '../support/test-portal.js';

test('silences in a row count up, an answer ends the rest, and one after a rest long over counts as the first', async (t) => {
  const portal = await startTestPortal({
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } },
  });
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const { webhook } = await portal.admin.createWebhook({ url: 'http://127.0.0.1:9/hook', event_types: '*' });
  const counts: number[] = [];
  const silence = (forgottenBefore: string, until: string) =>
    restReceiver(db, webhook.webhook_id, forgottenBefore, (unanswered) => {
      counts.push(unanswered);
      return until;
    });
  const stored = () =>
    db
      .selectFrom('webhooks')
      .select(['unanswered', 'rest_until'])
      .where('webhook_id', '=', webhook.webhook_id)
      .executeTakeFirstOrThrow();

  await silence('2026-03-02T08:00:00+00:00', '2026-03-02T09:00:30+00:00');
  await silence('2026-03-02T08:00:30+00:00', '2026-03-02T09:01:30+00:00');
  assert.deepEqual(counts, [1, 2]);
  assert.deepEqual(await stored(), { unanswered: 2, rest_until: '2026-03-02T09:01:30+00:00' });

  await endReceiverRest(db, webhook.webhook_id);
  assert.deepEqual(await stored(), { unanswered: 0, rest_until: null });

  await silence('2026-03-02T08:00:00+00:00', '2026-03-02T09:10:30+00:00');
  // A day later, the last rest over for far more than an hour: the first silence again.
  await silence('2026-03-03T08:00:00+00:00', '2026-03-03T09:00:30+00:00');
  assert.deepEqual(counts, [1, 2, 1, 1]);
});
