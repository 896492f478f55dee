// A plain create on PostgreSQL is one statement; when its connection breaks after the server
// committed it, the seam reads the change marker back and then the configuration by its key,
// which by then may carry a revocation's revision: a disable_user that committed in between
// stamped the row and sent its removal. The create must not then push the configuration at that
// same revision (on a tie the later instruction wins on the node) and put the peer back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalContext } from '../../../src/core/context.js';
import { createConfiguration } from '../../../src/core/issuing/index.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { privateDatabaseFor } from '../../support/private-postgres.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { startPostgresCutter } from '../../support/tcp-proxies.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a create in one statement whose answer was lost does not put back the peer of a user disabled meanwhile', async (t) => {
  const node = await startRevisionNode(t);
  const { url, atEnd } = await privateDatabaseFor(t);
  const cutter = await startPostgresCutter(url);
  atEnd(() => cutter.close());
  const portal = await startTestPortal({
    database: cutter.url,
    config: {
      databasePreparedStatements: false,
      reconcileInterval: 'PT1H',
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.63.0.0/24',
          wRangeSix: 'fd63::/64',
          defaultGateway: false,
          nodeUrl: node.url,
        },
      ],
    },
  });
  atEnd(() => portal.close());
  // Alice is known (this instance remembers her): her next plain create is one statement.
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  const ctx = portal.portal.ctx;
  const call = {
    caller: { kind: 'secret', sourceAddress: '192.0.2.7' },
    name: 'create',
    parameters: { user_id: 'alice', profile_id: 'employees' },
    successStatus: 200,
  } as const;
  // Held once the read back found the marker (the create committed), before the configuration is read.
  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('change_markers'),
  );
  const asCall: PortalContext = { ...ctx, db: ctx.db.withPlugin(hold), call, events: ctx.events.forCall(call) };
  const cut = cutter.cutNextStatement('INSERT INTO wg_peers', 'after-forwarding');
  const created = createConfiguration(asCall, {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    displayName: 'Phone',
    preferTcp: false,
    expiresIn: undefined,
    accept: 'application/x-wireguard-profile',
  });
  await cut;
  await hold.reached;

  // Meanwhile, on this or another instance: alice is disabled; her peers leave the node.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  const rows = await ctx.db.selectFrom('wg_peers').select('public_key').where('user_id', '=', 'alice').execute();
  assert.equal(rows.length, 2);
  for (const { public_key } of rows) assert.ok(!node.peers.has(public_key), 'the disable took every peer off');

  hold.release();
  await created;
  const back = rows.filter(({ public_key }) => node.peers.has(public_key)).map(({ public_key }) => public_key);
  assert.deepEqual(
    back,
    [],
    `a disabled user's peer is on the node again: ${JSON.stringify(node.log.filter((entry) => back.includes(entry.key)))}`,
  );
});
