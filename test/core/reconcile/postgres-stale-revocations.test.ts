// A revocation whose own instance could not tell the node (its path to the node is cut, and then
// it is gone for good, as a crash right after the commit) is taken to the node within seconds by
// another instance on the same database that reaches the node, not at its next full pass. Two
// portal instances on one PostgreSQL database, a real agent with wireguard-go in a namespace; the
// first instance reaches the node through a proxy the test cuts. PostgreSQL only: two instances.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { startCuttableProxy } from '../../support/tcp-proxies.js';
import { startTestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

/** "Within seconds": the revoking instance had its chance, then another one takes over. */
const REACH_LIMIT_MS = 20_000;

test('a revocation its own instance could not push is taken to the node within seconds by another instance', async (t) => {
  const proxy = await startCuttableProxy();
  const closing: (() => Promise<void>)[] = [() => proxy.close()];
  // The second instance first: the first one's test database goes with it.
  t.after(async () => {
    for (const close of closing.reverse()) await close();
  });
  let directUrl = '';
  const profile = (nodeUrl: string) => ({
    // No full pass comes to the rescue during the test.
    reconcileInterval: 'PT1H',
    revocationDeadline: 'PT1H',
    ProfileList: [
      {
        profileId: 'employees',
        displayName: 'Employees',
        hostName: 'vpn.example.org',
        wRangeFour: '10.49.0.0/24',
        wRangeSix: 'fd49::/64',
        defaultGateway: false,
        nodeUrl,
      },
    ],
  });
  const lab = await startPortalWithNode({
    config: (nodeUrl) => {
      directUrl = nodeUrl;
      proxy.forwardTo(Number(new URL(nodeUrl).port));
      return profile(proxy.url);
    },
  });
  closing.push(lab.close);
  const first = lab.portal;
  const second = await startTestPortal({
    config: profile(directUrl),
    dataDir: first.dataDir,
    database: first.database,
  });
  closing.push(second.close);
  await second.reconcile();

  assert.equal((await first.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  const created = await first.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const key = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
  assert.ok((await lab.peersOnNode()).has(key), 'alice’s peer is on the node');

  // The first instance loses its path to the node, revokes, and is gone before it could retry.
  proxy.cut();
  const revocationId = await first.admin.disableUser('alice');
  assert.ok(revocationId !== null);
  assert.ok((await lab.peersOnNode()).has(key), 'the first instance could not tell the node');
  await first.portal.close();

  await until('alice’s peer is off the node', async () => !(await lab.peersOnNode()).has(key), REACH_LIMIT_MS);
  await until(
    'the receipt is applied',
    async () => (await second.admin.revocation(revocationId)).state === 'applied',
    REACH_LIMIT_MS,
  );
  assert.equal((await lab.peersOnNode()).size, 1, 'bob’s peer stays');
});
