// A revocation that committed is answered as done, with its receipt, also when PostgreSQL goes
// down right after: the node has already taken the peer away, and what follows the change —
// ending the peer's session in the connection log, confirming the receipt — is retried for
// `databaseRetryFor` or left to the recovery pass; it never turns the answer into a 503. The
// receipt turns applied without going overdue. Real node agent (wireguard-go in a namespace),
// a PostgreSQL server of the test's own that it stops and starts while the node's answer to
// the removal is held back by a proxy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { REVOCATION_HEADER } from '../../src/protocol/admin-api.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { startPortalWithNode } from '../support/portal-with-node.js';
import { privateDatabaseFor } from '../support/private-postgres.js';
import { startHoldingProxy } from '../support/tcp-proxies.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

interface Outage {
  readonly call: 'disable_user' | 'delete_connection';
  /** How long PostgreSQL stays down after the node answered. */
  readonly downForMs: number;
  readonly databaseRetryFor: string;
  readonly title: string;
}

const OUTAGES: readonly Outage[] = [
  {
    call: 'disable_user',
    downForMs: 1500,
    databaseRetryFor: 'PT5S',
    title: 'disable_user that committed as PostgreSQL goes down for less than databaseRetryFor',
  },
  {
    call: 'delete_connection',
    downForMs: 1500,
    databaseRetryFor: 'PT5S',
    title: 'delete_connection that committed as PostgreSQL goes down for less than databaseRetryFor',
  },
  // Longer than the retries: the sessions and the confirmation are left to the reconcile pass.
  {
    call: 'disable_user',
    downForMs: 3500,
    databaseRetryFor: 'PT1S',
    title: 'disable_user that committed as PostgreSQL goes down for longer than databaseRetryFor',
  },
];

for (const { call, downForMs, databaseRetryFor, title } of OUTAGES) {
  test(`${title} answers 2xx with its receipt, and the receipt turns applied without going overdue`, async (t) => {
    const { server, url, atEnd } = await privateDatabaseFor(t);
    const proxy = await startHoldingProxy();
    atEnd(() => proxy.close());
    const lab = await startPortalWithNode({
      database: url,
      config: (nodeUrl) => {
        proxy.forwardTo(Number(new URL(nodeUrl).port));
        return {
          revocationDeadline: 'PT20S',
          databaseRetryFor,
          ProfileList: [
            {
              profileId: 'employees',
              displayName: 'Employees',
              hostName: 'vpn.example.org',
              wRangeFour: '10.52.0.0/24',
              wRangeSix: 'fd52::/64',
              nodeUrl: proxy.url,
            },
          ],
        };
      },
    });
    atEnd(() => lab.close());
    await lab.portal.reconcile();
    const created = await lab.portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
    assert.equal(created.status, 200, created.text);
    const key = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
    assert.ok((await lab.peersOnNode()).has(key));

    // The removal reaches the node only once PostgreSQL is down: the change committed, the
    // node takes the peer away, and everything after that meets a database that is not there.
    const held = proxy.holdNext('remove_peer');
    const answer =
      call === 'disable_user'
        ? lab.portal.post('/disable_user', { user_id: 'alice' })
        : lab.portal.post('/delete_connection', { user_id: 'alice', connection_id: key });
    await held;
    await server.shutDown();
    proxy.release();
    await sleep(downForMs);
    await server.startUp();
    const response = await answer;
    assert.equal(response.status, 204, response.text);
    const revocationId = response.headers.get(REVOCATION_HEADER);
    assert.ok(revocationId !== null && revocationId !== '', 'the answer names its receipt');
    assert.ok(!(await lab.peersOnNode()).has(key));
    // The recovery pass: it confirms what the call could not record (and ends the sessions).
    if (downForMs > 1500) await lab.portal.reconcile();

    const startedAt = performance.now();
    for (;;) {
      const receipt = await lab.portal.admin.revocation(revocationId);
      assert.notEqual(receipt.state, 'overdue');
      if (receipt.state === 'applied') break;
      assert.ok(performance.now() - startedAt < 15_000, `receipt still ${receipt.state}`);
      await sleep(200);
    }
  });
}
