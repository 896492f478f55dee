// A reconcile pass never rewrites a peer that is already as it should be on the node: every
// write of a peer resets WireGuard's handshake state for it. On a steady node, passes after
// passes write nothing to the interface (the agent logs each batch it applies, with its writes).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LAB_PROFILE, startTunnelLab } from '../../support/tunnel-lab.js';

test('on a steady node of 50 peers, three reconcile passes write nothing to the interface', async (t) => {
  const lab = await startTunnelLab({ client: false, portalConfig: { reconcileInterval: 'PT1H' } });
  t.after(lab.close);
  await lab.portal.reconcile();
  for (let index = 0; index < 50; index++)
    await lab.portal.admin.create({ user_id: `user-${index}`, profile_id: LAB_PROFILE });
  const before = await lab.peersOnNode();
  assert.equal(before.size, 50);
  await sleep(200); // the agent's last batch is logged after it was applied
  const batches = () =>
    lab.agent.withMessage('applied peer batch').reduce((sum, line) => sum + Number(line['writes'] ?? 0), 0);
  const writesBefore = batches();
  assert.ok(writesBefore > 0, 'the creates were written to the interface');

  for (let pass = 0; pass < 3; pass++) await lab.portal.reconcile();
  await sleep(200);
  assert.equal(batches(), writesBefore, 'no write during the passes');
  assert.deepEqual(await lab.peersOnNode(), before, 'and the node is as it was');
});
