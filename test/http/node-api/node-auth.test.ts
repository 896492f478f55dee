// Node API authentication: a node number that is no configured node is refused exactly as a
// wrong secret, without a key file read kept for it, so unauthenticated callers cannot grow
// the portal's memory one number at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { startTestPortal } from '../../support/test-portal.js';

test('unknown node numbers are refused as a wrong secret is, and leave nothing behind in the key store', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const keys = portal.portal.ctx.keys;
  const nodeSecret = keys.nodeSecret(asNodeNumber(0)) ?? '';
  const call = (nodeNumber: string, secret: string) =>
    portal.request(`${portal.nodeApiUrl}/server_config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'x-node-number': nodeNumber },
      body: new URLSearchParams({}),
    });

  assert.equal((await call('0', nodeSecret)).status, 200, 'the configured node with its secret');
  const wrongSecret = await call('0', 'nope');
  assert.equal(wrongSecret.status, 401);
  const before = keys.cachedFileCount;

  // A thousand numbers no profile runs on, with the real secret of node 0 at that.
  const statuses = new Map<number, number>();
  for (let batch = 0; batch < 20; batch++) {
    await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        const answer = await call(String(100_000 + batch * 50 + index), nodeSecret);
        assert.equal(answer.text, wrongSecret.text, 'the same answer as a wrong secret');
        assert.equal(answer.headers.get('www-authenticate'), wrongSecret.headers.get('www-authenticate'));
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      }),
    );
  }
  assert.deepEqual([...statuses], [[401, 1_000]]);
  assert.equal(keys.cachedFileCount, before, 'no key store entry for any of them');
});

test('a node taken out of the configuration is refused although its key file is still there', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const keys = portal.portal.ctx.keys;
  keys.createNodeKey(asNodeNumber(5));
  const answer = await portal.request(`${portal.nodeApiUrl}/server_config`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.nodeSecret(asNodeNumber(5)) ?? ''}`, 'x-node-number': '5' },
    body: new URLSearchParams({}),
  });
  assert.equal(answer.status, 401);
});
