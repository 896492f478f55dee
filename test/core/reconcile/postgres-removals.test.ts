// A reconcile pass removes from a node the peers it holds but should not, each at the revision
// of the change that made it unwanted. When the user is enabled again between the pass reading
// what the node should hold and the pass sending its removals, the pass leaves the peer alone:
// its row now carries the enable's revision, which the agent would take as newer than (or equal
// to) the enable's add, and the re-enabled user would lose the tunnel until the next pass. A real
// agent with wireguard-go in a namespace; the pass is held, by a plugin on its database, right
// after it read what the node should hold. PostgreSQL only: the plugin holds the pass's
// connection while it waits, and SQLite has one, which the enable needs (the pass is the same
// code on both).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { reconcileNode } from '../../../src/core/reconcile/pass.js';
import { asNodeNumber, type WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const employees: PortalConfigFile['ProfileList'][number] = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.47.0.0/24',
  wRangeSix: 'fd47::/64',
  defaultGateway: false,
};

test('a user enabled while a pass is under way keeps the tunnel: the pass does not remove a peer wanted again by then', async (t) => {
  const lab = await startPortalWithNode({
    // The scheduler's own passes stay out of the way: only the held pass runs.
    config: (nodeUrl) => ({ reconcileInterval: 'PT1H', ProfileList: [{ ...employees, nodeUrl }] }),
  });
  t.after(lab.close);
  const { portal } = lab;
  // Bob keeps the node from being emptied (a pass that would empty a node asks first).
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const file = parseWireGuardFile(created.text);
  const key = wireGuardPublicKey(file.interface.get('PrivateKey') as WireGuardKey);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.ok(!(await lab.peersOnNode()).has(key));
  // The peer is on the interface again, as a node that missed the removal would hold it.
  const address = (file.interface.get('Address') ?? '').split(',')[0]?.replace(/\/\d+$/, '/32') ?? '';
  await lab.node.exec('wg', ['set', lab.interfaceName, 'peer', key, 'allowed-ips', address]);
  assert.ok((await lab.peersOnNode()).has(key));

  // The wanted peers of a node: a select on wg_peers by node_number.
  const hold = new HoldStatement(
    (node, text) => node.kind === 'SelectQueryNode' && text.includes('"node_number"') && text.includes('"ip_four"'),
  );
  const ctx = portal.portal.ctx;
  const daemon = ctx.nodes.daemon(asNodeNumber(0));
  assert.ok(daemon !== undefined);
  const pass = reconcileNode({ ...ctx, db: ctx.db.withPlugin(hold) }, daemon);
  await hold.reached;
  // The pass read that alice is disabled; now she is enabled, and her peer is wanted again.
  assert.equal((await portal.post('/enable_user', { user_id: 'alice' })).status, 204);
  hold.release();
  await pass;
  assert.ok((await lab.peersOnNode()).has(key), 'the pass did not take the re-enabled user’s peer away');
});
