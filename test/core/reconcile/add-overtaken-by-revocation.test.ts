// A pass reads which peers a node should hold, then adds the missing ones; a revocation
// committed between that read and the add's arrival (by another instance, whose own push fails)
// must not be left to a later pass: the same pass takes the peer off again before it ends. Two
// portal instances on one database: the first cannot reach the node (it creates and disables),
// the second reaches it (it runs the pass). The node is a stand-in that keeps the agent's rule
// of revisions and holds the pass's add on its way while the disable happens.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconcileNode } from '../../../src/core/reconcile/pass.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { startTestPortal, UNREACHABLE_NODE } from '../../support/test-portal.js';

const profile = (nodeUrl: string) => ({
  // Only the pass the story runs.
  reconcileInterval: 'PT1H',
  ProfileList: [
    {
      profileId: 'employees',
      displayName: 'Employees',
      hostName: 'vpn.example.org',
      wRangeFour: '10.48.0.0/24',
      wRangeSix: 'fd48::/64',
      nodeUrl,
    },
  ],
});

test('a peer a pass adds after its user was disabled is off the node when the pass ends', async (t) => {
  let letAddGo = (): void => {};
  let addArrived = (): void => {};
  const arrived = new Promise<void>((resolve) => {
    addArrived = resolve;
  });
  const held = new Promise<void>((resolve) => {
    letAddGo = resolve;
  });
  let holding = false;
  const node = await startRevisionNode(t, {
    beforeAdd: async () => {
      if (!holding) return;
      addArrived();
      await held;
    },
  });
  const reaching = await startTestPortal({ config: profile(node.url) });
  t.after(() => reaching.close());
  const cutOff = await startTestPortal({
    config: profile(UNREACHABLE_NODE),
    dataDir: reaching.dataDir,
    database: reaching.database,
  });
  t.after(() => cutOff.close());
  await reaching.reconcile();

  // Alice's configuration is made by the instance that cannot tell the node.
  assert.equal((await cutOff.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const [row] = await cutOff.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute();
  const key = row?.public_key ?? assert.fail('no configuration');
  assert.ok(!node.peers.has(key), 'the node has not heard of alice yet');

  // The other instance's pass reads that alice is wanted and sends her peer; while the add is
  // on its way, the cut-off instance disables her, and its push fails.
  holding = true;
  const pass = reconcileNode(
    reaching.portal.ctx,
    reaching.portal.ctx.nodes.daemon(asNodeNumber(0)) ?? assert.fail('no daemon'),
  );
  await arrived;
  const revocation = await cutOff.admin.disableUser('alice');
  assert.ok(revocation !== null);
  letAddGo();
  await pass;

  const receipt = await reaching.admin.revocation(revocation);
  assert.ok(
    !node.peers.has(key),
    `alice is disabled (her receipt says ${receipt.state}), yet the pass left her peer on the node`,
  );
  assert.equal(receipt.state, 'applied', 'the pass took the peer off under the disable, and says so');
});
