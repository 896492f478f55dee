// A receiver's rest with several portal instances on one PostgreSQL database: the rest is kept
// with the subscription, so a receiver that never answers gets one attempt per rest from all the
// instances together, not one from each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';

const allowLoopback: Partial<PortalConfigFile> = {
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'], timeout: 'PT1S', retryFor: 'P1D' },
};

test('PostgreSQL, two portal instances: a receiver that never answers gets one attempt between them, then rests for both', async (t) => {
  const clock = new ManualClock();
  const first = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => first.close());
  const second = await startTestPortal({
    config: allowLoopback,
    clock,
    dataDir: first.dataDir,
    database: first.database,
  });
  t.after(() => second.close());
  const blackHole = await WebhookReceiver.start(() => new Promise<number>(() => {}));
  t.after(() => blackHole.close());
  await first.admin.createWebhook({ url: blackHole.url, event_types: '*' });
  const healthy = await WebhookReceiver.start();
  t.after(() => healthy.close());
  await first.admin.createWebhook({ url: healthy.url, event_types: '*' });

  // Events through both instances, each waking its own worker, while the first attempt hangs.
  const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
  for (const [index, userId] of users.entries())
    await (index % 2 === 0 ? first : second).admin.create({ user_id: userId, profile_id: 'employees' });
  await healthy.waitFor(
    (received) => received.filter((webhook) => webhook.payload.type === 'user.created').length === users.length,
    'every user.created at the receiver that answers',
  );
  await sleep(2_500);
  assert.equal(blackHole.received.length, 1, 'one attempt between the two instances');

  clock.advance(30_000);
  await blackHole.waitForCount(2, 'the attempt after the rest');
  await sleep(2_500);
  assert.equal(blackHole.received.length, 2, 'one attempt after 30 s, then a rest of a minute for both');
});
