// A pass reads the peers a node misses, then stands still (a portal stopped with SIGSTOP, a
// paused VM) while an administrator disables the user: the removal reaches the node, which
// remembers it for REMOVAL_MEMORY_MS only. Sent after that, the add from before the disable would
// find the removal forgotten and put the revoked peer back; the portal does not send an add
// whose state it read more than MAX_ADD_READ_AGE_MS before. Both clocks are stand-ins here: the
// portal's wall clock and the node's memory jump as they would over the freeze.
// PostgreSQL only: the held statement keeps its connection, and SQLite has one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconcileNode } from '../../../src/core/reconcile/pass.js';
import { REMOVAL_MEMORY_MS } from '../../../src/protocol/vpn-daemon.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { ManualClock } from '../../support/admin-keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { startPortalOnStandIn } from '../../support/stand-in-node.js';

test('an add a pass read before a disable and sent after the node forgot the removal is not sent', async (t) => {
  let nodeNowMs = 0;
  const node = await startRevisionNode(t, { nowMs: () => nodeNowMs });
  const clock = new ManualClock(new Date().toISOString());
  const portal = await startPortalOnStandIn(t, node.url, {
    clock,
    config: { reconcileInterval: 'PT1H' },
  });
  await portal.reconcile();
  const ctx = portal.portal.ctx;
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const [key] = node.peers.keys();
  assert.ok(key !== undefined, 'the create put the peer on the node');
  // The node lost its peers (a restart): the next pass finds alice's missing, and reads it to add it.
  node.peers.clear();
  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('"wg_peers"') && text.includes('"in"'),
  );
  const pass = reconcileNode(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    ctx.nodes.daemon(asNodeNumber(0)) ?? assert.fail(),
  );
  await hold.reached;

  // Meanwhile alice is disabled; her removal reaches the node.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.equal(node.log.at(-1)?.kind, 'remove');
  // The portal stands still for eleven minutes: the node forgets the removal meanwhile.
  clock.advance(REMOVAL_MEMORY_MS + 60_000);
  nodeNowMs += REMOVAL_MEMORY_MS + 60_000;
  hold.release();
  const result = await pass;

  assert.equal(result.added, 0, 'the add read before the disable is not sent');
  assert.ok(
    !node.peers.has(key),
    `the disabled user's peer is on the node again: ${JSON.stringify(node.log.filter((entry) => entry.key === key))}`,
  );
  // A pass that reads again finds nothing to add: alice is disabled.
  await portal.reconcile();
  assert.ok(!node.peers.has(key));
});
