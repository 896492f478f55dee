// A configuration made to expire before every other one leaves its node within seconds of its
// expiry, not at the next full pass: the portal's own scheduler set its sweep for the earliest
// expiry it knew, and a create that brings an earlier one must move that sweep forward. A real
// agent with wireguard-go in a namespace; the full pass runs once an hour here, so only the
// sweep can take the peer off in time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { until } from '../../support/until.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

/** Alice's configuration lives this long. */
const LIFETIME = 'PT6S';
const LIFETIME_MS = 6_000;
/** "Within seconds" of the expiry. */
const REACH_LIMIT_MS = 4_000;

test('a configuration that expires before all others leaves its node within seconds of its expiry', async (t) => {
  const lab = await startPortalWithNode({
    config: (nodeUrl) => ({
      reconcileInterval: 'PT1H',
      supportedSessionExpiry: ['P90D', LIFETIME],
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.48.0.0/24',
          wRangeSix: 'fd48::/64',
          defaultGateway: false,
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  // Bob's configuration is the earliest expiry the scheduler knows when alice's is made.
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  await portal.reconcile();
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees', expires_in: LIFETIME });
  assert.equal(created.status, 200, created.text);
  const madeAt = Date.now();
  const key = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
  assert.ok((await lab.peersOnNode()).has(key), 'alice’s peer is on the node');

  await until(
    'alice’s expired peer is off the node',
    async () => !(await lab.peersOnNode()).has(key),
    LIFETIME_MS + REACH_LIMIT_MS,
  );
  assert.ok(Date.now() - madeAt >= LIFETIME_MS - 1_000, 'not long before it expired');
  assert.deepEqual(await portal.admin.userConfigurationList('alice'), []);
  assert.equal((await lab.peersOnNode()).size, 1, 'bob’s peer stays');
});
