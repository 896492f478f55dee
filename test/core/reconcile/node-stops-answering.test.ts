// A node that stops answering in the middle of a pass is sent nothing more by that pass: each
// further change would wait out its own timeout while the pass holds the node's place and weight
// (which other nodes' passes, carrying revocations, and the Admin API's listings wait for). The
// node is a local HTTP server that answers `/i/node` and lists more peers than the pass may
// send at once, all unwanted, and never answers a removal.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { PARALLEL_CHANGES_PER_NODE } from '../../../src/core/reconcile/pass.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { confirmNodeReset } from '../../../src/storage/node-resets.js';
import { startTestPortal } from '../../support/test-portal.js';

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
  const server = createServer((request, response) => {
    request.resume();
    const path = new URL(request.url ?? '/', 'http://node').pathname;
    // Hung whole from its first removal on, as a stopped agent is: the probe does not see it back.
    if (removalsAsked > 0 || path === '/w/remove_peer') {
      if (path === '/w/remove_peer') removalsAsked += 1;
      return;
    }
    if (path === '/i/node')
      return void response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ rel_load_average: [0], load_average: [0], cpu_count: 1, node_uptime: 1, w_peer_count: 0 }),
        );
    if (path === '/w/peer_list')
      return void response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ peer_list: peers }));
    response.writeHead(404).end('{"error":"not found"}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const portal = await startTestPortal({
    config: {
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.46.0.0/24',
          wRangeSix: 'fd46::/64',
          nodeUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        },
      ],
    },
  });
  t.after(() => portal.close());
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
