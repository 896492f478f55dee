// A node that answers but whose peer list cannot be read (an error answer, a list longer than the
// portal reads) still gets the removals its revocation receipts wait for: a removal needs no list.
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { test } from 'node:test';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';

test('a node whose peer list fails still gets the removal a revocation waits for, and the receipt says applied once it answered', async (t) => {
  let removals: 'refused' | 'answered' = 'refused';
  const removed: string[] = [];
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') response.writeHead(500).end('{"error":"the peer list could not be read"}');
    else if (path === '/w/add_peer') response.writeHead(204).end();
    else if (path === '/o/connection_list') answerJson(response, { connection_list: [] });
    else if (path === '/w/remove_peer' && removals === 'refused') response.writeHead(500).end('{"error":"busy"}');
    else if (path === '/w/remove_peer')
      void text(response.req).then((body) => {
        removed.push(new URLSearchParams(body).get('public_key') ?? '');
        response.writeHead(204).end();
      });
    else return false;
    return true;
  });
  const portal = await startPortalOnStandIn(t, nodeUrl);
  await portal.reconcile();
  await portal.admin.create({ user_id: 'quinn', profile_id: 'employees' });
  const [configuration] = await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute();
  assert.ok(configuration !== undefined);

  // Quinn is disabled while the node refuses removals: the receipt waits for the node.
  const revocationId = (await portal.admin.disableUser('quinn')) ?? '';
  assert.equal((await portal.admin.revocation(revocationId)).state, 'pending');

  removals = 'answered';
  await portal.reconcile();
  assert.deepEqual(removed, [configuration.public_key], 'the pass sent the removal without the list');
  assert.equal((await portal.admin.revocation(revocationId)).state, 'applied');
});
