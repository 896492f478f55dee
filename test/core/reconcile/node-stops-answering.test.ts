// A node that stops answering in the middle of a pass is sent nothing more by that pass: each
// further change would wait out its own timeout while the pass holds the node's place and weight
// (which other nodes' passes, carrying revocations, and the Admin API's listings wait for). The
// node is a local HTTP server that answers `/i/node` and lists more peers than the pass may
// send at once, all unwanted, and never answers a removal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PARALLEL_CHANGES_PER_NODE } from '../../../src/core/reconcile/pass.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { confirmNodeReset } from '../../../src/storage/node-resets.js';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';

const NODE = asNodeNumber(0);
const UNWANTED = PARALLEL_CHANGES_PER_NODE + 40;

test('a node that stops answering under a pass is sent no more removals by it, once the first ones time out', async (t) => {
  let removalsAsked = 0;
  const peers = Array.from({ length: UNWANTED }, (_, index) => ({
    public_key: Buffer.alloc(32, index + 1).toString('base64'),
    ip_net: [],
    bytes_in: 0,
    bytes_out: 0,
  }));
  const nodeUrl = await startStandInNode(t, (path, response) => {
    // Hung whole from its first removal on, as a stopped agent is: the probe does not see it back.
    if (removalsAsked > 0 || path === '/w/remove_peer') {
      if (path === '/w/remove_peer') removalsAsked += 1;
      return true;
    }
    if (path !== '/w/peer_list') return false;
    answerJson(response, { peer_list: peers });
    return true;
  });
  const portal = await startPortalOnStandIn(t, nodeUrl);
  // An administrator confirmed the node may be emptied (`vpn-portal node-reset 0`).
  await confirmNodeReset(portal.portal.ctx.db, NODE, formatAtom(new Date()));

  await portal.portal.reconcileNow();

  assert.equal(portal.portal.ctx.nodes.isDown(NODE), true, 'the node is held for down after its removals timed out');
  assert.equal(
    removalsAsked,
    PARALLEL_CHANGES_PER_NODE,
    'the removals in flight when it stopped answering, and none after',
  );
});
