// A node that goes away and comes back is announced to webhook receivers: node.down with the
// reason when the portal first fails to reach the real node agent, node.up when it answers again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startPortalWithNode } from '../support/portal-with-node.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

test('a receiver hears node.down when the node agent stops and node.up when it is back, once each', async (t) => {
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const lab = await startPortalWithNode({
    config: (nodeUrl) => ({
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  await lab.portal.reconcile();
  await lab.portal.admin.createWebhook({ url: receiver.url, event_types: 'node.down,node.up' });

  await lab.stopAgent();
  await receiver.waitForCount(1, 'node.down');
  await lab.startAgent();
  await receiver.waitForCount(2, 'node.up');
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  assert.deepEqual(receiver.types(), ['node.down', 'node.up'], 'once each');
  const [down, up] = receiver.received.map((received) => received.payload);
  assert.equal(down?.type === 'node.down' ? down.data.node_number : null, 0);
  assert.match(down?.type === 'node.down' ? down.data.reason : '', /\S/, 'with the reason');
  assert.deepEqual(up?.data, { node_number: 0 });
});
