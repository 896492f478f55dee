// A revocation may commit while a reconcile pass is under way, between what the pass read and
// what it sends: the pass must neither confirm the receipt by an instruction read before it nor
// leave behind a peer its own add put back. Two portal instances on one database: the first
// cannot reach the node (it disables, its pushes fail), the second reaches it (it runs the
// pass). The node is a stand-in that keeps the agent's rule of revisions and holds one of the
// pass's instructions on its way while the revocation happens.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { reconcileNode } from '../../../src/core/reconcile/pass.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { type RevisionNode, startRevisionNode } from '../../support/revision-node.js';
import { startTestPortal, type TestPortal, UNREACHABLE_NODE } from '../../support/test-portal.js';

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

interface Stage {
  readonly node: RevisionNode;
  readonly reaching: TestPortal;
  readonly cutOff: TestPortal;
  /** Holds the next instruction of the kind on its way (once the story asks), until let go. */
  readonly hold: () => { readonly arrived: Promise<void>; readonly letGo: () => void };
  /** Runs one pass of the reaching instance over the node. */
  readonly pass: () => Promise<unknown>;
}

async function stage(t: TestContext, kind: 'add' | 'remove'): Promise<Stage> {
  let holding: { arrived: () => void; held: Promise<void> } | null = null;
  const waitIfHeld = async (): Promise<void> => {
    const current = holding;
    if (current === null) return;
    holding = null;
    current.arrived();
    await current.held;
  };
  const node = await startRevisionNode(t, kind === 'add' ? { beforeAdd: waitIfHeld } : { beforeRemove: waitIfHeld });
  const reaching = await startTestPortal({ config: profile(node.url) });
  t.after(() => reaching.close());
  const cutOff = await startTestPortal({
    config: profile(UNREACHABLE_NODE),
    dataDir: reaching.dataDir,
    database: reaching.database,
  });
  t.after(() => cutOff.close());
  await reaching.reconcile();
  const hold = () => {
    let arrived = (): void => {};
    let letGo = (): void => {};
    const hasArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    holding = { arrived, held: new Promise<void>((resolve) => (letGo = resolve)) };
    return { arrived: hasArrived, letGo };
  };
  const pass = () =>
    reconcileNode(reaching.portal.ctx, reaching.portal.ctx.nodes.daemon(asNodeNumber(0)) ?? assert.fail('no daemon'));
  return { node, reaching, cutOff, hold, pass };
}

async function onlyKey(portal: TestPortal): Promise<string> {
  const [row] = await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute();
  return row?.public_key ?? assert.fail('no configuration');
}

test('a pass confirms no receipt by a removal the node ignored for a newer instruction', async (t) => {
  const { node, reaching, cutOff, hold, pass } = await stage(t, 'remove');
  assert.equal((await reaching.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const key = await onlyKey(reaching);
  assert.ok(node.peers.has(key), 'alice’s peer is on the node');

  // The first disable does not reach the node: a pass of the other instance takes the peer off.
  assert.ok((await cutOff.admin.disableUser('alice')) !== null);
  assert.ok(node.peers.has(key), 'the cut-off instance could not tell the node');
  const removal = hold();
  const passed = pass();
  // The pass's removal, read under the first disable, is on its way while alice is enabled and
  // disabled again; the second disable does not reach the node either.
  await removal.arrived;
  await reaching.admin.enableUser('alice');
  const second = await cutOff.admin.disableUser('alice');
  assert.ok(second !== null);
  removal.letGo();
  await passed;

  const receipt = await reaching.admin.revocation(second);
  const lastRemoval = node.log.filter((entry) => entry.key === key && entry.kind === 'remove').at(-1);
  assert.ok(
    !node.peers.has(key),
    `alice is disabled and her receipt says ${receipt.state}, yet her peer is on the node (last removal at revision ${lastRemoval?.revision}, applied: ${lastRemoval?.applied})`,
  );
  assert.equal(receipt.state, 'applied', 'the pass took the peer off under the second disable, and says so');
});

test('a peer a pass adds after its user was disabled is off the node when the pass ends', async (t) => {
  const { node, cutOff, reaching, hold, pass } = await stage(t, 'add');
  // Alice's configuration is made by the instance that cannot tell the node.
  assert.equal((await cutOff.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const key = await onlyKey(cutOff);
  assert.ok(!node.peers.has(key), 'the node has not heard of alice yet');

  // The other instance's pass reads that alice is wanted and sends her peer; while the add is
  // on its way, the cut-off instance disables her, and its push fails.
  const add = hold();
  const passed = pass();
  await add.arrived;
  const revocation = await cutOff.admin.disableUser('alice');
  assert.ok(revocation !== null);
  add.letGo();
  await passed;

  const receipt = await reaching.admin.revocation(revocation);
  assert.ok(
    !node.peers.has(key),
    `alice is disabled (her receipt says ${receipt.state}), yet the pass left her peer on the node`,
  );
  assert.equal(receipt.state, 'applied', 'the pass took the peer off under the disable, and says so');
});
