// A pass's removal carries the revision it read; a revocation committed after that read is newer,
// and the node may rightly ignore the pass's removal (an enable between the two put the peer
// back). Such an answer says nothing of the later revocation: the pass must not confirm its
// receipt by it. Two portal instances on one database: the first cannot reach the node (it
// disables, its pushes fail), the second reaches it (it creates, enables and runs the pass). The
// node is a stand-in that keeps the agent's rule of revisions and holds the pass's removal on its
// way while the enable and the second disable happen.
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
      wRangeFour: '10.47.0.0/24',
      wRangeSix: 'fd47::/64',
      nodeUrl,
    },
  ],
});

test('a pass confirms no receipt by a removal the node ignored for a newer instruction', async (t) => {
  let letRemovalGo = (): void => {};
  let removalArrived = (): void => {};
  const arrived = new Promise<void>((resolve) => {
    removalArrived = resolve;
  });
  const held = new Promise<void>((resolve) => {
    letRemovalGo = resolve;
  });
  let holding = false;
  const node = await startRevisionNode(t, {
    beforeRemove: async () => {
      if (!holding) return;
      removalArrived();
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

  assert.equal((await reaching.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const [row] = await reaching.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute();
  const key = row?.public_key ?? assert.fail('no configuration');
  assert.ok(node.peers.has(key), 'alice’s peer is on the node');

  // The first disable does not reach the node: a pass of the other instance takes the peer off.
  assert.ok((await cutOff.admin.disableUser('alice')) !== null);
  assert.ok(node.peers.has(key), 'the cut-off instance could not tell the node');
  holding = true;
  const pass = reconcileNode(
    reaching.portal.ctx,
    reaching.portal.ctx.nodes.daemon(asNodeNumber(0)) ?? assert.fail('no daemon'),
  );
  // The pass's removal, read under the first disable, is on its way while alice is enabled and
  // disabled again; the second disable does not reach the node either.
  await arrived;
  await reaching.admin.enableUser('alice');
  const second = await cutOff.admin.disableUser('alice');
  assert.ok(second !== null);
  letRemovalGo();
  await pass;

  const receipt = await reaching.admin.revocation(second);
  const lastRemoval = node.log.filter((entry) => entry.key === key && entry.kind === 'remove').at(-1);
  assert.ok(
    !node.peers.has(key),
    `alice is disabled and her receipt says ${receipt.state}, yet her peer is on the node (last removal at revision ${lastRemoval?.revision}, applied: ${lastRemoval?.applied})`,
  );
  assert.equal(receipt.state, 'applied', 'the pass took the peer off under the second disable, and says so');
});
